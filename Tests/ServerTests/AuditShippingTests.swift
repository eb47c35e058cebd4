import Crypto
import Foundation
import KeyCustody
import PaywardenSandbox
import PaywardenServer
import PaywardenServices
import PaywardenTestTraits
import PaywardenTesting
import Synchronization
import Testing

/// The service's audit lines shipped to syslog (`PAYWARDEN_AUDIT_SYSLOG`) as they are written,
/// to a receiving socket of this test standing in for the machine's daemon.
@Suite(.serialized, .releasesTestResources)
struct AuditShippingTests {
    static func lines(_ server: TestServer) throws -> [[UInt8]] {
        let path = try #require(server.server.configuration.auditLogPath)
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))).split(separator: 0x0A).map(Array.init)
    }

    /// The body of an RFC 5424 message: what follows its seven header fields.
    static func body(_ message: [UInt8]) -> [UInt8] {
        var rest = message[...]
        for _ in 0..<7 { rest = rest.drop { $0 != 0x20 }.dropFirst() }
        return Array(rest)
    }

    /// Every line the server writes (the vault keys made at start, a redemption) arrives as it is
    /// in the file; with the daemon gone the file still gets the line, and the loss is counted and logged.
    @Test func everyAuditLineReachesSyslogAndALossIsCounted() async throws {
        let receiver = try SyslogReceiver.unixSocket()
        defer { receiver.close() }
        let directory = NSTemporaryDirectory() + "paywarden-audit-\(UUID().uuidString.prefix(8))"
        TestResources.track(directory: directory)
        let publicKey = Mutex<P256.Signing.PublicKey?>(nil)
        try await withServer({
            $0.auditSyslog = receiver.destination
            $0.auditLogPath = directory + "/audit.jsonl"
        }) { server in
            publicKey.withLock { $0 = server.server.auditChain?.keys.publicKey }
            let registered = try await server.send(
                .POST, "/eProtect/paypage",
                body: try EProtectForms.form(token: try server.ecToken(), paypageID: TestServer.examplePaypage), apiKey: .some(nil),
                contentType: "application/x-www-form-urlencoded")
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(registered.text.utf8)) as? [String: Any])
            let id = try #require(answer["paypageRegistrationId"] as? String, "\(registered.text)")
            let redeemed = try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: server.vaultKey)
            #expect(redeemed.status == 200, "\(redeemed.text)")

            let lines = try Self.lines(server)
            let shipped = receiver.drain().map(Self.body)
            #expect(shipped.count >= 2, "the vault keys made at start and the redemption: \(shipped.count)")
            #expect(
                shipped.map { String(decoding: $0, as: UTF8.self) }
                    == lines.map { String(decoding: $0, as: UTF8.self) },
                "every line, byte for byte, in order")
            #expect(String(decoding: shipped.last ?? [], as: UTF8.self).contains(#""action":"redeem""#))
            var metrics = try await server.operations("/metrics").text
            #expect(metrics.contains("paywarden_audit_syslog_failures_total 0"))

            receiver.close()
            let again = try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: server.vaultKey)
            #expect(again.status == 200, "a lost copy fails nothing: \(again.text)")
            #expect(try Self.lines(server).count == lines.count + 1, "the file has the line")
            metrics = try await server.operations("/metrics").text
            #expect(metrics.contains("paywarden_audit_syslog_failures_total 1"))
            #expect(server.logs.text.contains("audit lines are not reaching syslog; the audit file still has them"))
            #expect(!server.logs.text.contains(id))
        }
        // Sealed, and closed when the server stopped: the trail verifies with the public key alone.
        let key = try #require(publicKey.withLock { $0 })
        let report = try await AuditVerifier(publicKeys: [key]).verify(files: [directory + "/audit.jsonl"])
        #expect(report.verified && report.writers == 1 && report.unsealed == 0 && report.checkpoints == 1, "\(report.findings)")
    }

    /// A destination nothing can be sent to (a mistyped socket path) refuses the start, naming the setting.
    @Test func aDestinationNothingCanBeSentToRefusesTheStart() async throws {
        let error = await #expect(throws: ServerStartError.self) {
            try await withServer({ $0.auditSyslog = .unixSocket(path: "/nonexistent/paywarden/log") }) { _ in }
        }
        let reason = error.map { "\($0)" } ?? ""
        #expect(reason.contains("PAYWARDEN_AUDIT_SYSLOG is unix:/nonexistent/paywarden/log"), "\(reason)")
        #expect(reason.contains("No such file or directory"), "\(reason)")
    }
}
