import Foundation
import PaywardenConfiguration
import PaywardenPrimitives
import PaywardenServer
import PaywardenServices
import PaywardenTestTraits
import PaywardenTesting
import Testing

@Suite(.serialized, .releasesTestResources)
struct SettingsTests {
    /// A configuration file in a temporary directory, removed when the test ends.
    func file(_ json: String) throws -> String {
        let directory = NSTemporaryDirectory() + "paywarden-config-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        TestResources.track(directory: directory)
        let path = directory + "/paywarden.json"
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func source(_ settings: PaywardenSettings, _ key: String) -> ConfigurationSources.Source? {
        settings.effective.first { $0.setting.key == key }?.source
    }

    @Test func defaultsApplyWhenNothingIsSet() async throws {
        let settings = try await PaywardenSettings.load(environment: [:])
        #expect(settings.server.listen == ListenAddress(host: "127.0.0.1", port: 8080))
        #expect(settings.hsm.modulePath == "/usr/lib/softhsm/libsofthsm2.so")
        #expect(settings.hsm.token == "paywarden")
        #expect(settings.hsm.sessionKeyCopies == "auto")
        #expect(settings.hsm.workers == ProcessInfo.processInfo.activeProcessorCount)
        #expect(settings.verification.signingTimeWindow == 300)
        #expect(settings.server.tls == nil)
        #expect(source(settings, "listen") == .default)
    }

    @Test func theEnvironmentWinsOverTheFileAndEachValueSaysWhereItCameFrom() async throws {
        let path = try file(
            #"{"paywarden": {"listen": "0.0.0.0:9000", "hsm_workers": 3, "hsm_allow_software_oaep": true, "signing_time_window": "120"}}"#)
        let settings = try await PaywardenSettings.load(environment: ["PAYWARDEN_LISTEN": "127.0.0.1:9001", "PAYWARDEN_CONFIG": path])
        #expect(settings.server.listen.port == 9001)
        #expect(source(settings, "listen") == .environment)
        #expect(settings.hsm.workers == 3)
        #expect(source(settings, "hsm_workers") == .file)
        #expect(settings.hsm.allowSoftwareOAEPDecoding)
        #expect(settings.verification.signingTimeWindow == 120)
        #expect(source(settings, "max_body_bytes") == .default)
    }

    @Test(arguments: [
        ("PAYWARDEN_HSM_WORKERS", "zero", "a whole number from 1 to 256"),
        ("PAYWARDEN_HSM_WORKERS", "0", "a whole number from 1 to 256"),
        ("PAYWARDEN_SIGNING_TIME_WINDOW", "86401", "a whole number from 1 to 86400"),
        ("PAYWARDEN_HSM_SESSION_KEY_COPIES", "sometimes", "auto, on, off"),
        ("PAYWARDEN_HSM_ALLOW_SOFTWARE_OAEP", "maybe", "true or false"),
        ("PAYWARDEN_LISTEN", "8080", "host:port"),
        ("PAYWARDEN_MAX_BODY_BYTES", "10", "a whole number from 1024 to 1048576"),
        ("PAYWARDEN_AUDIT_SYSLOG", "udp:logs.example.com:514", "only to loopback"),
        ("PAYWARDEN_AUDIT_SYSLOG", "tcp:127.0.0.1:514", "expected unix:/PATH"),
    ])
    func aBadValueNamesTheSettingAndWhatItAccepts(variable: String, value: String, accepts: String) async throws {
        let error = await #expect(throws: ConfigurationError.self) {
            try await PaywardenSettings.load(environment: [variable: value])
        }
        #expect(error?.message.contains(variable) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(accepts) == true, "\(error?.message ?? "")")
    }

    /// The audit trail's syslog destination, from the environment or the file.
    @Test func theAuditSyslogDestinationIsRead() async throws {
        #expect(try await PaywardenSettings.load(environment: [:]).auditSyslog == nil)
        let local = try await PaywardenSettings.load(environment: ["PAYWARDEN_AUDIT_SYSLOG": "unix:/dev/log"])
        #expect(local.auditSyslog == .unixSocket(path: "/dev/log"))
        let loopback = try await PaywardenSettings.load(environment: ["PAYWARDEN_AUDIT_SYSLOG": "udp:127.000.0.1:5514"])
        #expect(loopback.auditSyslog == .udp(host: "127.0.0.1", port: 5514))
    }

    @Test func aMissingOrMalformedFileIsAnErrorNotDefaults() async throws {
        await #expect(throws: ConfigurationError.self) {
            try await PaywardenSettings.load(environment: ["PAYWARDEN_CONFIG": "/nonexistent/paywarden.json"])
        }
        let malformed = try file("{not json")
        await #expect(throws: ConfigurationError.self) { try await PaywardenSettings.load(environment: ["PAYWARDEN_CONFIG": malformed]) }
    }

    @Test func secretsAreRedactedAndNeverReadFromTheFile() async throws {
        // A secret, or any key the file may not hold, stops start-up rather than being ignored.
        for (content, named) in [
            (#"{"paywarden": {"pin": "from-the-file"}}"#, "PAYWARDEN_PIN"), (#"{"paywarden": {"hsm_worker": 2}}"#, "hsm_worker"),
        ] {
            let path = try file(content)
            let refused = await #expect(throws: ConfigurationError.self) {
                try await PaywardenSettings.load(environment: ["PAYWARDEN_CONFIG": path])
            }
            #expect(refused?.message.contains(named) == true, "\(String(describing: refused))")
            #expect(refused?.message.contains("from-the-file") == false)
        }
        let both = await #expect(throws: ConfigurationError.self) {
            try await PaywardenSettings.load(environment: ["PAYWARDEN_PIN": "123456", "PAYWARDEN_PIN_FILE": "/run/pin"])
        }
        #expect(both?.message.contains("both set") == true)
        #expect(both?.message.contains("123456") == false)

        let settings = try await PaywardenSettings.load(environment: ["PAYWARDEN_PIN": "123456"])
        guard case .value(let pin) = settings.hsm.pin else {
            Issue.record("the PIN was not read")
            return
        }
        #expect(pin.revealed == Array("123456".utf8))
        #expect("\(pin)" == "<redacted>")
        let shown = settings.effective.first { $0.setting.key == "pin" }
        #expect(shown?.displayValue == "<redacted>")
        #expect(shown?.source == .environment)
        var dumped = ""
        dump(settings, to: &dumped)
        #expect(!dumped.contains("123456"), "the settings, printed whole, must not show the PIN")
        #expect(!"\(settings)".contains("123456"))
        #expect(Redaction.redactingPassword(inURL: "postgres://app:s3cret@db:5432/pay") == "postgres://app:<redacted>@db:5432/pay")
    }

    /// TLS fails closed: each partial or contradictory combination refuses to start, naming the
    /// settings involved.
    @Test func partialOrContradictoryTLSRefusesToStart() async throws {
        let certificate = try file("certificate")
        let key = try file("key")
        let ca = try file("ca")
        let refused: [([String: String], [String])] = [
            (["PAYWARDEN_TLS_CERTIFICATE": certificate], ["PAYWARDEN_TLS_CERTIFICATE", "PAYWARDEN_TLS_PRIVATE_KEY"]),
            (["PAYWARDEN_TLS_PRIVATE_KEY": key], ["PAYWARDEN_TLS_CERTIFICATE", "PAYWARDEN_TLS_PRIVATE_KEY"]),
            (["PAYWARDEN_TLS_CLIENT_CA": ca], ["PAYWARDEN_TLS_CLIENT_CA", "PAYWARDEN_TLS_CERTIFICATE"]),
            (["PAYWARDEN_TLS_REQUIRE_CLIENT_CERTIFICATE": "true"], ["PAYWARDEN_TLS_REQUIRE_CLIENT_CERTIFICATE", "plain HTTP"]),
            (
                [
                    "PAYWARDEN_TLS_CERTIFICATE": certificate, "PAYWARDEN_TLS_PRIVATE_KEY": key,
                    "PAYWARDEN_TLS_REQUIRE_CLIENT_CERTIFICATE": "true",
                ],
                ["PAYWARDEN_TLS_REQUIRE_CLIENT_CERTIFICATE", "PAYWARDEN_TLS_CLIENT_CA"]
            ),
            (
                ["PAYWARDEN_TLS_CERTIFICATE": "/nonexistent.pem", "PAYWARDEN_TLS_PRIVATE_KEY": key],
                ["PAYWARDEN_TLS_CERTIFICATE", "readable file"]
            ),
        ]
        for (environment, named) in refused {
            let error = await #expect(throws: ConfigurationError.self, "\(environment.keys.sorted())") {
                try await PaywardenSettings.load(environment: environment)
            }
            for name in named { #expect(error?.message.contains(name) == true, "\(error?.message ?? "") should name \(name)") }
        }
        let mutual = try await PaywardenSettings.load(environment: [
            "PAYWARDEN_TLS_CERTIFICATE": certificate, "PAYWARDEN_TLS_PRIVATE_KEY": key, "PAYWARDEN_TLS_CLIENT_CA": ca,
            "PAYWARDEN_TLS_REQUIRE_CLIENT_CERTIFICATE": "true",
        ])
        #expect(mutual.server.tls?.requireClientCertificate == true)
    }

    /// Every instance re-reads the vault keys once a maintenance interval: a rotated-out key
    /// destroyed sooner than two of them after its successor could still be in use elsewhere.
    @Test func aRetiredKeyGraceShorterThanTwoMaintenanceIntervalsRefusesToStart() async throws {
        for (maintenance, grace) in [("30", "59"), ("30", "0"), ("600", "900")] {
            let error = await #expect(throws: ConfigurationError.self, "maintenance \(maintenance)s, grace \(grace)s") {
                try await PaywardenSettings.load(environment: [
                    "PAYWARDEN_VAULT_MAINTENANCE_SECONDS": maintenance, "PAYWARDEN_VAULT_RETIRED_KEY_GRACE_SECONDS": grace,
                ])
            }
            for name in ["PAYWARDEN_VAULT_RETIRED_KEY_GRACE_SECONDS", "PAYWARDEN_VAULT_MAINTENANCE_SECONDS"] {
                #expect(error?.message.contains(name) == true, "\(error?.message ?? "") should name \(name)")
            }
        }
        let accepted = try await PaywardenSettings.load(environment: [
            "PAYWARDEN_VAULT_MAINTENANCE_SECONDS": "10", "PAYWARDEN_VAULT_RETIRED_KEY_GRACE_SECONDS": "20",
        ])
        #expect(accepted.server.vaultRetiredKeyGraceSeconds == 20 && accepted.server.vaultMaintenanceSeconds == 10)
        let defaults = try await PaywardenSettings.load(environment: [:])
        #expect(defaults.server.vaultRetiredKeyGraceSeconds >= 2 * defaults.server.vaultMaintenanceSeconds)
    }

    @Test func apiKeyEntriesAreCheckedAndNeverEchoed() async throws {
        let (_, entry) = APIKey.generate(name: "checkout", scopes: [.redeem, .detokenize], organization: "acme")
        let settings = try await PaywardenSettings.load(environment: [
            "PAYWARDEN_API_KEYS": entry + ", " + APIKey.generate(name: "ops", scopes: [.decrypt]).entry
        ])
        let configuration = try ServerConfiguration(settings: settings)
        #expect(configuration.apiKeys.keys.map(\.name) == ["checkout", "ops"])
        #expect(configuration.apiKeys.keys.first?.organization == "acme")
        #expect(configuration.apiKeys.keys.first?.scopes == [.redeem, .detokenize])
        let pasted = "payments:pw_thisIsAKeyPastedByMistake_0123456789abcdef:decrypt"
        for bad in [pasted, "ops:\(String(repeating: "a", count: 64)):fly", "ops:\(String(repeating: "a", count: 64)):decrypt:a b"] {
            let loaded = try await PaywardenSettings.load(environment: ["PAYWARDEN_API_KEYS": bad])
            let error = #expect(throws: ConfigurationError.self) { try ServerConfiguration(settings: loaded) }
            #expect(error?.message.contains("PAYWARDEN_API_KEYS") == true)
            #expect(error?.message.contains("pw_thisIsAKey") == false, "the entry's key field must not be echoed")
        }
    }

    /// `deploy/paywarden.example.json` lists every setting the file may hold, with the catalog's
    /// default: it cannot drift from the code.
    @Test func theExampleFileListsEverySettingWithItsDefault() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let path = root.appendingPathComponent("deploy/paywarden.example.json").path
        let example = try JSONDecoder().decode([String: [String: ExampleValue]].self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        let values = try #require(example["paywarden"])
        let fileSettings = SettingCatalog.all.filter { !$0.environmentOnly }
        #expect(Set(values.keys) == Set(fileSettings.map(\.key)))
        for setting in fileSettings {
            let text = values[setting.key]?.text
            #expect(
                text == setting.defaultValue.literal,
                "\(setting.key): the example says \(text ?? "null"), the catalog \(setting.defaultValue)")
        }
        // And the example itself loads.
        _ = try await PaywardenSettings.load(environment: ["PAYWARDEN_CONFIG": path])
    }

    /// The operations guide's settings table names every setting.
    @Test func theOperationsGuideNamesEverySetting() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let guide = try String(contentsOf: root.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        for setting in SettingCatalog.all {
            #expect(guide.contains("`\(setting.environmentName)`"), "docs/operations.md does not document \(setting.environmentName)")
        }
    }

    /// docs/settings.md is the catalog's reference as generated; `PAYWARDEN_UPDATE_DOCS=1` rewrites it.
    @Test func theSettingsReferenceIsGeneratedFromTheCatalog() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let file = root.appendingPathComponent("docs/settings.md")
        let generated = SettingsReference.markdown()
        if ProcessInfo.processInfo.environment["PAYWARDEN_UPDATE_DOCS"] == "1" {
            try generated.write(to: file, atomically: true, encoding: .utf8)
        }
        let written = try String(contentsOf: file, encoding: .utf8)
        #expect(
            written == generated,
            "docs/settings.md differs from the catalog; regenerate it: PAYWARDEN_UPDATE_DOCS=1 swift test --filter SettingsReference")
        for setting in SettingCatalog.all { #expect(written.contains("| `\(setting.environmentName)` |")) }
    }

    /// A JSON value as the environment would spell it.
    enum ExampleValue: Decodable {
        case text(String?)

        var text: String? {
            switch self {
            case .text(let text): text
            }
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .text(nil)
            } else if let bool = try? container.decode(Bool.self) {
                self = .text(String(bool))
            } else if let int = try? container.decode(Int.self) {
                self = .text(String(int))
            } else {
                self = .text(try container.decode(String.self))
            }
        }
    }
}
