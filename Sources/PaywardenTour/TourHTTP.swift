import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// The service's HTTP API as the tour calls it: one request at a time, each printed with the part
/// of its answer that matters.
struct TourHTTP: Sendable {
    let baseURL: String

    struct Reply: Sendable {
        let status: Int
        let body: [UInt8]

        var text: String { String(decoding: body, as: UTF8.self) }

        /// The body as a JSON object (empty when it is not one).
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }

        /// `error.code` of a JSON error body.
        var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }

        /// What a failure message may say of this reply: its status and error code, never its body,
        /// which can hold card data, a token or a registration ID.
        var summary: String { "\(status)" + (errorCode.map { " \($0)" } ?? "") }

        /// The answer line: `← STATUS what matters`.
        func print(_ what: String) {
            Swift.print("  ← \(status)  \(what)")
        }
    }

    /// Sends one request; `who` says whose credentials it carries, for the printout. A path that
    /// carries a registration ID or a token is printed as `shown` (the secret masked), never whole.
    func send(
        _ method: HTTPMethod, _ path: String, shown: String? = nil, body: [UInt8]? = nil, contentType: String = "application/json",
        apiKey: String? = nil, who: String
    ) async throws -> Reply {
        print("  → \(method.rawValue) \(shown ?? path)  (\(who))")
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        if let apiKey { request.headers.add(name: "Authorization", value: "Bearer \(apiKey)") }
        if let body {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let collected = try await response.body.collect(upTo: 1 << 20)
        return Reply(status: Int(response.status.code), body: Array(buffer: collected))
    }

    /// The service's answer to `GET /readyz` (200 when ready), or nil when nothing answers there.
    func readiness() async -> HTTPResponseStatus? {
        var request = HTTPClientRequest(url: baseURL + "/readyz")
        request.method = .GET
        guard let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(2)) else { return nil }
        _ = try? await response.body.collect(upTo: 1 << 16)
        return response.status
    }
}
