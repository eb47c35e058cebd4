import Foundation
import Hummingbird
import HummingbirdTesting
import PaywardenServices
import Testing

@testable import PaywardenServer

/// The observation middleware on a router of its own: an error that is not an HTTP response
/// leaves as Paywarden's typed 500 (never Hummingbird's empty one), counted under its route.
struct MiddlewareTests {
    struct Unexpected: Error {}

    @Test func anUnexpectedErrorIsATyped500AndIsCounted() async throws {
        let metrics = ServerMetrics()
        let router = Router(context: PaywardenRequestContext.self)
        router.middlewares.add(RequestObservationMiddleware(metrics: metrics))
        router.get("/broken") { _, _ -> String in throw Unexpected() }
        router.get("/refused") { _, _ -> String in throw APIError.forbidden("no") }
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/broken", method: .get) { response in
                #expect(response.status == .internalServerError)
                let body = try JSONDecoder().decode([String: [String: String]].self, from: Data(buffer: response.body))
                #expect(body["error"]?["code"] == "internal_error")
                #expect(body["error"]?["message"]?.contains("Unexpected") == false, "the error's text stays in the log")
            }
            try await client.execute(uri: "/refused", method: .get) { response in
                #expect(response.status == .forbidden)
            }
        }
        let exposition = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(exposition.contains(#"route="/broken",status="500""#), "\(exposition)")
        #expect(exposition.contains(#"route="/refused",status="403""#), "\(exposition)")
    }
}

/// The credential of an Authorization header: the Bearer scheme in any case, spaces and tabs
/// around the key dropped, nothing else taken for a key.
struct BearerCredentialTests {
    @Test(
        arguments: [
            ("Bearer abc", "abc"), ("bearer abc", "abc"), ("BEARER abc", "abc"), ("Bearer   abc \t", "abc"), ("Bearer\tabc", nil),
            ("Bearer ", nil), ("Bearer  \t ", nil), ("Basic abc", nil), ("Bearerabc", nil), ("Bearer\u{0}abc", nil), ("", nil),
            ("Bearer a b", "a b"),
        ] as [(String, String?)])
    func credential(_ header: String, _ expected: String?) {
        #expect(BearerAPIKeyAuthenticator<PaywardenRequestContext>.bearerCredential(header).map(String.init) == expected)
    }
}
