import Foundation
import PaywardenConfiguration
import PaywardenServer
import PaywardenServices
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// The TLS files are read when the configuration is loaded, not when the listener starts: a
/// file that cannot be read, does not hold what its setting says, or a key that is not the
/// certificate's refuses the start, naming the setting.
@Suite(.serialized, .releasesTestResources)
struct TLSFileTests {
    /// A directory of PEM files made by OpenSSL: two self-signed certificates with their keys
    /// (`a`, `b`), a file of text, and a sub-directory.
    struct Files {
        let directory: String
        func path(_ name: String) -> String { directory + "/" + name }

        init() throws {
            directory = NSTemporaryDirectory() + "paywarden-tls-files-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: directory + "/folder.pem", withIntermediateDirectories: true)
            TestResources.track(directory: directory)
            for name in ["a", "b"] {
                let made = try ChildProcess.run(
                    "/usr/bin/openssl",
                    [
                        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "\(name)-key.pem",
                        "-out", "\(name).pem", "-subj", "/CN=127.0.0.1", "-days", "1",
                    ], directory: URL(fileURLWithPath: directory))
                #expect(made.status == 0, "\(made.stderr)")
            }
            try "not PEM at all\n".write(toFile: directory + "/text.pem", atomically: true, encoding: .utf8)
        }
    }

    func configuration(_ environment: [String: String]) async throws -> ServerConfiguration {
        try ServerConfiguration(settings: await PaywardenSettings.load(environment: environment))
    }

    func expectRefusal(_ environment: [String: String], naming names: [String], sourceLocation: SourceLocation = #_sourceLocation)
        async
    {
        let error = await #expect(throws: ConfigurationError.self, "\(environment)", sourceLocation: sourceLocation) {
            _ = try await configuration(environment)
        }
        for name in names {
            #expect(error?.message.contains(name) == true, "\(error?.message ?? "") should name \(name)", sourceLocation: sourceLocation)
        }
    }

    @Test func wrongServerTLSFilesRefuseToStartNamingTheSetting() async throws {
        let files = try Files()
        let certificate = "PAYWARDEN_TLS_CERTIFICATE"
        let key = "PAYWARDEN_TLS_PRIVATE_KEY"
        let ca = "PAYWARDEN_TLS_CLIENT_CA"
        let good = [certificate: files.path("a.pem"), key: files.path("a-key.pem")]
        #expect(try await configuration(good).tls != nil)
        let mutual = good.merging([ca: files.path("b.pem"), "PAYWARDEN_TLS_REQUIRE_CLIENT_CERTIFICATE": "true"]) { $1 }
        #expect(try await configuration(mutual).tls?.requireClientCertificate == true)

        // Unreadable: a directory passes a "readable" test but cannot be read as a file.
        await expectRefusal(good.merging([certificate: files.path("folder.pem")]) { $1 }, naming: [certificate, "a readable file"])
        await expectRefusal(good.merging([key: files.path("folder.pem")]) { $1 }, naming: [key, "a readable file"])
        await expectRefusal(mutual.merging([ca: files.path("folder.pem")]) { $1 }, naming: [ca, "a readable file"])
        // Not what the setting says.
        await expectRefusal(good.merging([certificate: files.path("text.pem")]) { $1 }, naming: [certificate, "PEM certificate"])
        await expectRefusal(good.merging([certificate: files.path("a-key.pem")]) { $1 }, naming: [certificate, "PEM certificate"])
        await expectRefusal(good.merging([key: files.path("text.pem")]) { $1 }, naming: [key, "PEM private key"])
        await expectRefusal(good.merging([key: files.path("a.pem")]) { $1 }, naming: [key, "PEM private key"])
        await expectRefusal(mutual.merging([ca: files.path("text.pem")]) { $1 }, naming: [ca, "PEM CA certificates"])
        // A key that is not the certificate's.
        await expectRefusal(
            good.merging([key: files.path("b-key.pem")]) { $1 }, naming: [key, certificate, "is not the private key of the certificate"])
    }

    @Test func wrongRelayClientCertificateFilesRefuseToStartNamingTheSetting() async throws {
        let files = try Files()
        let upstream = [
            "PAYWARDEN_RELAY_CNP_UPSTREAM": "http://127.0.0.1:9999", "PAYWARDEN_RELAY_CNP_MERCHANT_IDS": "example=01234",
        ]
        let certificate = "PAYWARDEN_RELAY_CNP_UPSTREAM_CLIENT_CERTIFICATE"
        let key = "PAYWARDEN_RELAY_CNP_UPSTREAM_CLIENT_KEY"
        let good = upstream.merging([certificate: files.path("a.pem"), key: files.path("a-key.pem")]) { $1 }
        #expect(try await configuration(good).relay.cnp?.clientKey != nil)

        await expectRefusal(good.merging([key: files.path("b-key.pem")]) { $1 }, naming: [key, certificate, "is not the private key"])
        await expectRefusal(good.merging([certificate: files.path("text.pem")]) { $1 }, naming: [certificate, "PEM certificate"])
        await expectRefusal(good.merging([key: files.path("text.pem")]) { $1 }, naming: [key, "PEM private key"])
        await expectRefusal(good.merging([key: files.path("folder.pem")]) { $1 }, naming: [key, "a readable file"])
    }

    /// The client key setting names an HSM key by id or pkcs11: URI; its certificate is then
    /// optional (the key's imported one). Whether the key exists is checked against the HSM at
    /// start-up (ServerTests); here, what the setting's text means.
    @Test func theRelayClientKeySettingNamesAnHSMKeyByIDOrURI() async throws {
        let files = try Files()
        let upstream = [
            "PAYWARDEN_RELAY_CNP_UPSTREAM": "http://127.0.0.1:9999", "PAYWARDEN_RELAY_CNP_MERCHANT_IDS": "example=01234",
        ]
        let certificate = "PAYWARDEN_RELAY_CNP_UPSTREAM_CLIENT_CERTIFICATE"
        let key = "PAYWARDEN_RELAY_CNP_UPSTREAM_CLIENT_KEY"
        for (value, id) in [
            ("0A1B2C3D4E5F60718293A4B5C6D7E8F9", "0a1b2c3d4e5f60718293a4b5c6d7e8f9"), ("pkcs11:id=%0a%1B%2c", "0a1b2c"),
            ("pkcs11:token=paywarden;id=%01%02;type=private", "0102"), ("pkcs11:id=abcd", "abcd"),
        ] {
            let relay = try await configuration(upstream.merging([key: value]) { $1 }).relay
            #expect(relay.cnp?.clientKeysInHSM.map(\.hex) == [id], "\(value)")
            #expect(relay.cnp?.clientKey == nil && relay.cnp?.clientCertificateChain.isEmpty == true)
        }
        // With a certificate file, its chain is loaded; the HSM checks the key matches at start-up.
        let withCertificate = try await configuration(upstream.merging([key: "pkcs11:id=%01", certificate: files.path("a.pem")]) { $1 })
        #expect(withCertificate.relay.cnp?.clientCertificateChain.count == 1)

        await expectRefusal(upstream.merging([key: "pkcs11:object=relay"]) { $1 }, naming: [key, "pkcs11: URI with the key's id"])
        await expectRefusal(upstream.merging([key: "pkcs11:id=%01?pin-value=1234"]) { $1 }, naming: [key, "PAYWARDEN_PIN_FILE"])
        await expectRefusal(upstream.merging([certificate: files.path("a.pem")]) { $1 }, naming: [certificate, key])
        await expectRefusal(upstream.merging([key: files.path("a-key.pem")]) { $1 }, naming: [key, certificate])
        await expectRefusal(["PAYWARDEN_RELAY_CNP_UPSTREAM_CLIENT_KEY": "pkcs11:id=%01"], naming: [key, "PAYWARDEN_RELAY_CNP_UPSTREAM"])
        await expectRefusal(upstream.merging([key: files.path("missing.pem")]) { $1 }, naming: [key, "a readable file"])

        // A changeover: HSM keys in order of preference; a PEM key only alone, each key once.
        let two = try await configuration(upstream.merging([key: "pkcs11:id=%0b%0c, 0A0B"]) { $1 }).relay
        #expect(two.cnp?.clientKeysInHSM.map(\.hex) == ["0b0c", "0a0b"])
        await expectRefusal(
            upstream.merging([key: "0a0b," + files.path("a-key.pem")]) { $1 }, naming: [key, "PEM file among several keys"])
        await expectRefusal(upstream.merging([key: "0a0b,pkcs11:id=%0A%0B"]) { $1 }, naming: [key, "each key once"])
        await expectRefusal(upstream.merging([key: "0a0b,0c0d,0e0f"]) { $1 }, naming: [key, "a changeover is between two"])
    }
}
