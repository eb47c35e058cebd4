import Foundation
import Logging
import PaywardenServices
import PaywardenTestTraits
import PaywardenTesting
import Synchronization
import Testing

/// `PAYWARDEN_LOG_FORMAT=json`: one object a line with its fields, for every line the server
/// writes; neither format carries the card data of the requests (every redaction check searches
/// both renderings, see `CapturedLog`).
@Suite(.serialized, .releasesTestResources)
struct LogFormatTests {
    @Test func everyJSONLineIsAnObjectWithItsFieldsAndNoCardData() async throws {
        try await withServer { server in
            let pan = "4457119922391006"
            let token = try server.ecToken(payload: PaymentPayloads.threeDSecure(pan: pan))
            let decrypted = try await server.send(.POST, "/v1/payment-tokens/decrypt", body: token)
            #expect(decrypted.status == 200, "\(decrypted.text)")
            let registered = try await server.send(
                .POST, "/eProtect/paypage", body: try EProtectForms.form(token: try server.ecToken(), paypageID: TestServer.examplePaypage),
                apiKey: .some(nil), contentType: "application/x-www-form-urlencoded")
            let id = try #require(
                (try JSONSerialization.jsonObject(with: Data(registered.body)) as? [String: Any])?["paypageRegistrationId"] as? String)

            let lines = server.logs.lines(.json)
            #expect(lines.count == server.logs.lines(.text).count && lines.count > 3)
            var requestLines = 0
            for line in lines {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
                let time = try #require(object["time"] as? String)
                #expect(time.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "\(time)")
                #expect(Logger.Level(rawValue: object["level"] as? String ?? "") != nil && object["label"] as? String == "paywarden-test")
                #expect(object["source"] is String && object["message"] is String && object["metadata"] is [String: Any], "\(line)")
                if object["message"] as? String == "request" {
                    requestLines += 1
                    #expect((object["request_id"] as? String)?.isEmpty == false, "\(line)")
                    let metadata = object["metadata"] as? [String: Any] ?? [:]
                    #expect(metadata["route"] is String && metadata["status"] is String && metadata["hb.request.id"] == nil, "\(line)")
                }
            }
            #expect(requestLines >= 2)
            for secret in [pan, "AgAAAAAABk4DWZ4C28yUQAAAAAA=", id] {
                for format in LogFormat.allCases {
                    #expect(!server.logs.lines(format).joined().contains(secret), "\(format) log holds a secret")
                }
            }
        }
    }

    /// Whatever the metadata holds (quotes, newlines, control characters, non-ASCII, nesting), one
    /// event is one line of valid JSON that gives the values back.
    @Test func valuesAreEscapedAndNestedAndEachEventIsOneLine() throws {
        let stream = LineStream()
        var handler = LogFormat.json.handler(label: "test", stream: stream, metadataProvider: nil)
        handler.logLevel = .trace
        let tricky = "a \"quoted\"\nline\twith \\ and \u{01} and café ☕"
        var logger = Logger(label: "test") { _ in handler }
        logger[metadataKey: "trace_id"] = "4bf92f3577b34da6a3ce929d0e0e4736"
        logger.warning(
            "multi\nline \"message\"",
            metadata: ["value": "\(tricky)", "list": ["1", "two"], "nested": ["inner": ["deep": "x"]], "hb.request.id": "r-1"])
        let written = stream.text
        #expect(written.hasSuffix("\n") && written.dropLast().split(separator: "\n").count == 1, "\(written)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(written.utf8)) as? [String: Any])
        #expect(object["message"] as? String == "multi\nline \"message\"" && object["level"] as? String == "warning")
        #expect(object["request_id"] as? String == "r-1" && object["trace_id"] as? String == "4bf92f3577b34da6a3ce929d0e0e4736")
        let metadata = try #require(object["metadata"] as? [String: Any])
        #expect(metadata["value"] as? String == tricky)
        #expect(metadata["list"] as? [String] == ["1", "two"])
        #expect(((metadata["nested"] as? [String: Any])?["inner"] as? [String: Any])?["deep"] as? String == "x")
        #expect(metadata["trace_id"] == nil && metadata["hb.request.id"] == nil, "promoted keys leave the metadata")
    }

    @Test func anUnknownFormatRefusesToStart() throws {
        var environment = ProcessInfo.processInfo.environment
        environment["PAYWARDEN_LOG_FORMAT"] = "xml"
        let output = try PaywardenProcess(environment: environment).run(["config", "show"])
        #expect(
            output.status == 3 && output.stderr.contains("PAYWARDEN_LOG_FORMAT") && output.stderr.contains("text, json"), "\(output.stderr)"
        )
    }

    final class LineStream: TextOutputStream, Sendable {
        private let written = Mutex("")
        var text: String { written.withLock { $0 } }
        func write(_ string: String) { written.withLock { $0 += string } }
    }
}
