import ApplePay
import Foundation
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// The real Apple-signed vectors, read in place from ../shared/vectors.
@Suite(.serialized, .releasesTestResources)
struct ConformanceTests {
    static let decryptable = ["gala-2014", "gala-2021", "payu-sandbox-2018", "basistheory-ec-old", "basistheory-ec-new", "basistheory-rsa"]
    static let signed = decryptable + ["processout-sigonly-ec-2017"]

    static func signingTime(_ vector: String) throws -> String {
        if vector == "processout-sigonly-ec-2017" { return "2017-02-01T18:45:06Z" }  // SOURCE.txt
        let text = try ConformanceVectors.json(vector, "intermediates.json")["cmsSigningTime"] as! String
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "MMM d HH:mm:ss yyyy 'GMT'"
        let date = try #require(formatter.date(from: text.replacingOccurrences(of: "  ", with: " ")))
        return ISO8601DateFormatter().string(from: date)
    }

    /// Every decryptable vector, imported with `paywarden keys import` and decrypted with
    /// `paywarden token decrypt` as of its signing time, byte for byte.
    @Test(arguments: decryptable)
    func decryptsByteForByte(vector: String) async throws {
        try #require(ConformanceVectors.available, "vectors absent")
        let env = try await AdminTestEnvironment.make()
        let directory = ConformanceVectors.directory + "/" + vector
        let imported: PaywardenProcess.Output
        if FileManager.default.fileExists(atPath: directory + "/merchant_cert.pem") {
            imported = try env.paywarden(
                "keys", "import", "--key", directory + "/merchant_key.pem",
                "--certificate", directory + "/merchant_cert.pem", "--allow-expired-certificate")
        } else {
            let merchant = try String(contentsOfFile: directory + "/merchant_id.txt", encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines)
            imported = try env.paywarden("keys", "import", "--key", directory + "/merchant_key.pem", "--merchant-id", merchant)
        }
        #expect(imported.status == 0, "\(imported.stderr)")

        let at = try Self.signingTime(vector)
        let output = try env.paywarden("token", "decrypt", directory + "/token.json", "--at", at, "--reveal", "--json")
        #expect(output.status == 0, "\(output.stderr)")
        let expected = try ConformanceVectors.data(vector, "expected.json")
        // The response embeds the payload verbatim: find it between its fixed neighbours.
        let prefix = #"{"paymentData":"#
        let suffix = #","key":{"id":"#
        let body = output.stdout.trimmingCharacters(in: .newlines)
        let start = try #require(body.range(of: prefix)).upperBound
        let end = try #require(body.range(of: suffix, options: .backwards)).lowerBound
        #expect(Data(body[start..<end].utf8) == expected, "\(vector)")

        // Masked by default: the PAN shows its last four digits only.
        let masked = try env.paywarden("token", "decrypt", directory + "/token.json", "--at", at)
        let pan = try #require(
            (try JSONSerialization.jsonObject(with: expected) as? [String: Any])?["applicationPrimaryAccountNumber"] as? String)
        #expect(masked.status == 0)
        #expect(!masked.stdout.contains(pan))
        #expect(masked.stdout.contains(String(pan.suffix(4))))
    }

    /// Every signature verifies as of its signing time and is refused as of now.
    @Test(arguments: signed)
    func signatureVerifiesAtSigningTimeOnly(vector: String) async throws {
        try #require(ConformanceVectors.available, "vectors absent")
        let env = try await AdminTestEnvironment.make()
        let file = ConformanceVectors.directory + "/" + vector + "/token.json"
        let then = try env.paywarden("token", "inspect", file, "--at", try Self.signingTime(vector), "--json")
        #expect(then.status == 0, "\(then.stdout) \(then.stderr)")
        #expect(then.stdout.contains(#""verified" : true"#))
        #expect(then.stdout.contains("Apple Root CA - G3"))
        let now = try env.paywarden("token", "inspect", file)
        #expect(now.status == 1)
        #expect(now.stderr.hasPrefix("paywarden: signing_time_out_of_window: "))
        // A day after signing, the window refuses it too; the chain is still fine.
        let later = ISO8601DateFormatter().date(from: try Self.signingTime(vector))!.addingTimeInterval(86_400)
        let dayAfter = try env.paywarden("token", "inspect", file, "--at", ISO8601DateFormatter().string(from: later))
        #expect(dayAfter.status == 1)
        #expect(dayAfter.stderr.contains("signing_time_out_of_window"))
    }

    /// The rotation pair: one merchant, two keys, each token routed by its publicKeyHash.
    @Test func rotationPairIsRoutedByPublicKeyHash() async throws {
        try #require(ConformanceVectors.available, "vectors absent")
        let env = try await AdminTestEnvironment.make()
        var keyIDs: [String: String] = [:]
        for vector in ["basistheory-ec-old", "basistheory-ec-new"] {
            let directory = ConformanceVectors.directory + "/" + vector
            let output = try env.paywarden(
                "keys", "import", "--key", directory + "/merchant_key.pem", "--certificate",
                directory + "/merchant_cert.pem", "--allow-expired-certificate", "--json")
            keyIDs[vector] = try AdminTestEnvironment.key(in: output).id
        }
        let listed = try env.listedKeys()
        #expect(Set(listed.compactMap(\.merchantId)).count == 1, "one merchant, two keys")
        for vector in ["basistheory-ec-old", "basistheory-ec-new"] {
            let output = try env.paywarden(
                "token", "decrypt", ConformanceVectors.directory + "/" + vector + "/token.json",
                "--at", try Self.signingTime(vector), "--json")
            #expect(output.status == 0, "\(output.stderr)")
            #expect(output.stdout.contains(#""key":{"id":"\#(keyIDs[vector]!)""#))
        }
    }

    /// Wrong trust anchors refuse genuine tokens: the chain must end in the configured root.
    @Test func genuineTokenIsRefusedUnderAnotherRoot() async throws {
        try #require(ConformanceVectors.available, "vectors absent")
        let env = try await AdminTestEnvironment.make()
        var cli = env.cli
        cli.environment["PAYWARDEN_TRUST_ROOTS"] = try ApplePayTestPKI(rsaLeaf: false).writeRoot(to: env.home)
        let output = try cli.run([
            "token", "inspect", ConformanceVectors.directory + "/gala-2014/token.json", "--at", "2014-10-27T19:51:43Z",
        ])
        #expect(output.status == 1)
        #expect(output.stderr.contains("certificate_chain_invalid"))
    }
}
