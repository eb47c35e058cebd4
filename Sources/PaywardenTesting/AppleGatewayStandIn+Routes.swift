import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import PaywardenPrimitives
import X509

extension AppleGatewayStandIn {
    /// Apple's routes, with Apple's header requirements.
    static func route(_ request: RecordedRequest, events: [String: StandInResponse]) -> StandInResponse {
        let path = request.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        guard parts.first == "paymentservices" else { return .error(status: 404, message: "no such resource") }
        if let refused = checkHeaders(request) { return refused }
        switch (request.method, Array(parts.dropFirst())) {
        case ("GET", let rest)
        where rest.count == 6 && rest[0] == "v1" && rest[1] == "merchantId" && rest[3] == "merchantToken"
            && rest[4] == "event":
            return events["\(rest[2])/\(rest[5])"] ?? .error(status: 404, message: "Event not found")
        case ("POST", let rest) where rest.count == 5 && rest[0] == "v1" && rest[1] == "merchantId" && rest[3] == "merchantToken":
            let body = request.jsonBody
            guard let token = body?["merchantTokenIdentifier"] as? String, !token.isEmpty else {
                return .error(status: 400, message: "merchantTokenIdentifier is required")
            }
            switch rest[4] {
            case "unlink":
                return StandInResponse(status: 204)
            case "updateMerchantMetadata":
                guard let metadata = body?["merchantMetadata"] as? [String: Any], metadata["tokenNotificationURL"] is String else {
                    return .error(status: 400, message: "merchantMetadata.tokenNotificationURL is required")
                }
                return .json("{}")
            default:
                return .error(status: 404, message: "no such resource")
            }
        case ("POST", ["startSession"]), ("POST", ["paymentSession"]):
            return session(request)
        default:
            return .error(status: 404, message: "no such resource")
        }
    }

    /// Apple requires `Content-Type: application/json` and an `x-request-id` UUID on every call.
    static func checkHeaders(_ request: RecordedRequest) -> StandInResponse? {
        guard request.header("content-type")?.lowercased().hasPrefix("application/json") == true else {
            return .error(status: 400, message: "Content-Type must be application/json")
        }
        guard let id = request.header("x-request-id"), UUID(uuidString: id) != nil else {
            return .error(status: 400, message: "x-request-id must be a UUID")
        }
        return nil
    }

    /// An opaque merchant session object, as Apple returns one.
    private static func session(_ request: RecordedRequest) -> StandInResponse {
        guard let body = request.jsonBody, let merchant = body["merchantIdentifier"] as? String,
            let displayName = body["displayName"] as? String, let initiative = body["initiative"] as? String,
            let context = body["initiativeContext"] as? String
        else {
            return .error(status: 400, message: "merchantIdentifier, displayName, initiative and initiativeContext are required")
        }
        let now = Int(Date().timeIntervalSince1970 * 1000)
        let hash = SHA256.hash(data: Data(merchant.utf8)).map { String(format: "%02X", $0) }.joined()
        let random = { (count: Int) in (0..<count).map { _ in String(format: "%02X", UInt8.random(in: 0...255)) }.joined() }
        let session: [String: Any] = [
            "epochTimestamp": now, "expiresAt": now + 3_600_000, "merchantSessionIdentifier": "SSH" + random(16),
            "nonce": random(4).lowercased(), "merchantIdentifier": hash, "domainName": context, "displayName": displayName,
            "initiative": initiative, "signature": Data((0..<64).map { _ in UInt8.random(in: 0...255) }).base64EncodedString(),
            "operationalAnalyticsIdentifier": "\(displayName):\(hash)", "retries": 0, "pspId": hash,
        ]
        return StandInResponse(status: 200, body: StandInResponse.encode(session), headers: [("Content-Type", "application/json")])
    }
}

extension AppleGatewayStandIn {
    /// The request as recorded: with the client certificate and TLS version of its connection.
    static func record(_ head: HTTPRequestHead, body: [UInt8], context: ChannelHandlerContext) -> RecordedRequest {
        let tls = try? context.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self)
        let peer = (try? tls?.peerCertificate?.toDERBytes()) ?? nil
        let certificate = peer.flatMap { try? Certificate(derEncoded: $0) }
        let version: String? =
            switch tls?.tlsVersion {
            case .tlsv13?: "TLSv1.3"
            case .tlsv12?: "TLSv1.2"
            case let other?: "\(other)"
            case nil: nil
            }
        return RecordedRequest(
            method: head.method.rawValue, path: head.uri, headers: head.headers.map { ($0.name, $0.value) }, body: body,
            clientCertificateSubject: certificate.map { "\($0.subject)" },
            clientCertificateSerial: certificate.map { Hex.encode($0.serialNumber.bytes) },
            clientCertificateDER: peer, tlsVersion: version
        )
    }
}
