import ApplePay
import Foundation
import Hummingbird
import NIOCore

/// `POST /v1/payment-tokens/decrypt`: a `PKPaymentToken` or its `paymentData` in, the
/// decrypted payload exactly as Apple sent it out, with where it came from.
struct DecryptController {
    let service: DecryptionService
    let maxBodyBytes: Int

    func decrypt(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > maxBodyBytes {
            throw APIError.payloadTooLarge(limit: maxBodyBytes)
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: maxBodyBytes)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw APIError.payloadTooLarge(limit: maxBodyBytes)
        }
        let result: DecryptedPaymentToken
        do {
            result = try await service.decrypt(Array(buffer: body))
        } catch {
            throw APIError(error)
        }
        return Response(status: .ok, headers: [.contentType: "application/json"],
                        body: .init(byteBuffer: ByteBuffer(bytes: Self.render(result))))
    }

    /// `{"paymentData":{…verbatim…},"token":{…},"key":{…}}`: the payload is spliced in as
    /// decrypted, so no field is dropped or reordered.
    static func render(_ result: DecryptedPaymentToken) -> [UInt8] {
        let signingTime = RFC3339.string(from: result.signingTime)
        var out = Array(#"{"paymentData":"#.utf8)
        out += result.paymentData
        out += Array(#","token":{"version":"\#(result.version.rawValue)","transactionId":"\#(result.transactionID)","publicKeyHash":"\#(result.publicKeyHash)","signingTime":"\#(signingTime)"},"key":{"id":"\#(result.keyID)","merchantIdentifierHash":"\#(result.merchantIdentifierHash)"}}"#.utf8)
        return out
    }
}
