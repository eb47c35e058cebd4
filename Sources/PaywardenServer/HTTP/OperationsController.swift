import Foundation
import Hummingbird
import NIOCore

/// `/healthz` (the process answers), `/readyz` (HSM logged in, key map loaded) and `/metrics`.
struct OperationsController {
    let maintenance: HSMMaintenanceService
    let metrics: ServerMetrics

    func health(_ request: Request, context: PaywardenRequestContext) -> Response {
        json(.ok, #"{"status":"ok"}"#)
    }

    func readiness(_ request: Request, context: PaywardenRequestContext) -> Response {
        let hsm = maintenance.decryption.hsm
        let body = #"{"ready":\#(maintenance.isReady),"keys":\#(maintenance.decryption.keys.count),"ecdhPath":"\#(hsm.capabilities.ecdhPath?.rawValue ?? "none")","rsaPath":"\#(hsm.capabilities.rsaDecryptionPath?.rawValue ?? "none")"}"#
        return json(maintenance.isReady ? .ok : .serviceUnavailable, body)
    }

    func metrics(_ request: Request, context: PaywardenRequestContext) -> Response {
        Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                 body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition())))
    }

    private func json(_ status: HTTPResponse.Status, _ body: String) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: body)))
    }
}
