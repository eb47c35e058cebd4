import Foundation
import PaywardenTesting
import Testing

/// `paywarden config show`, run as an operator runs it: the effective value of every setting,
/// where it came from, secrets redacted, and a bad value refused with exit status 3.
struct ConfigShowTests {
    struct Line: Decodable {
        let key: String
        let environment: String
        let value: String
        let source: String
    }

    func cli(_ environment: [String: String]) -> PaywardenProcess {
        var base = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PAYWARDEN_") }
        base.merge(environment) { $1 }
        return PaywardenProcess(environment: base)
    }

    @Test func showsEachValueWithItsSourceAndNeverASecret() throws {
        let directory = NSTemporaryDirectory() + "config-show-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/paywarden.json"
        try Data(#"{"paywarden": {"hsm_max_pending": 512, "listen": "127.0.0.1:1"}}"#.utf8).write(to: URL(fileURLWithPath: file))
        let run = cli(["PAYWARDEN_PIN": "s3cret-pin", "PAYWARDEN_LISTEN": "127.0.0.1:9999"])

        let output = try run.run(["config", "show", "--config", file, "--json"])
        #expect(output.status == 0, "\(output.stderr)")
        let lines = Dictionary(
            uniqueKeysWithValues: try JSONDecoder().decode([Line].self, from: Data(output.stdout.utf8)).map { ($0.key, $0) })
        #expect(lines["pin"]?.value == "<redacted>")
        #expect(lines["pin"]?.source == "environment")
        #expect(lines["listen"]?.value == "127.0.0.1:9999", "the environment wins over the file")
        #expect(lines["listen"]?.source == "environment")
        #expect(lines["hsm_max_pending"]?.value == "512")
        #expect(lines["hsm_max_pending"]?.source == "file")
        #expect(lines["max_body_bytes"]?.value == "65536")
        #expect(lines["max_body_bytes"]?.source == "default")
        #expect(lines["hsm_workers"]?.environment == "PAYWARDEN_HSM_WORKERS")
        let text = try run.run(["config", "show", "--config", file])
        #expect(text.status == 0)
        for printed in [output.stdout, output.stderr, text.stdout, text.stderr] { #expect(!printed.contains("s3cret-pin")) }
        #expect(text.stdout.contains("PAYWARDEN_LISTEN"))
    }

    @Test func aBadValueExitsWithTheMisconfigurationStatusNamingTheSetting() throws {
        let output = try cli(["PAYWARDEN_HSM_WORKERS": "0"]).run(["config", "show"])
        #expect(output.status == 3, "\(output.stdout) \(output.stderr)")
        #expect(output.stderr.contains("PAYWARDEN_HSM_WORKERS"))
        #expect(output.stderr.contains("1 to 256"), "\(output.stderr)")
    }
}
