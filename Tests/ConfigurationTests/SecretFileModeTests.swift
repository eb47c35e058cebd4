import Foundation
import PKCS11
import PaywardenConfiguration
import PaywardenServer
import PaywardenTestTraits
import PaywardenTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A file holding a secret (the PIN, a password, an API key, a TLS private key) must be its
/// owner's alone, as OpenSSH and PostgreSQL require of theirs: one that group or others may read
/// refuses the start, naming the setting and the `chmod` that fixes it. Certificates are public
/// and pass whatever their mode.
///
/// The files here are created by this process, so they are owned by its user whether the tests
/// run as root (CI's `make test`) or not; the root-owned and other-owner cases are in
/// ``SecretFileRuleTests`` and, where they need `chown`, only run as root.
@Suite(.serialized, .releasesTestResources)
struct SecretFileModeTests {
    /// A temporary directory (0700) of secret files and links to them.
    struct Files {
        let directory: String

        init() throws {
            directory = NSTemporaryDirectory() + "paywarden-secret-modes-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            TestResources.track(directory: directory)
        }

        /// A file holding `contents`, with exactly `mode` whatever the umask.
        func file(_ name: String, _ contents: String, mode: mode_t) throws -> String {
            let path = directory + "/" + name
            try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
            #expect(chmod(path, mode) == 0)
            return path
        }

        /// A symbolic link (owned by this process's user) to `target`.
        func link(_ name: String, to target: String) throws -> String {
            let path = directory + "/" + name
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
            return path
        }

        /// A self-signed certificate (left 0644: it is public) and its key, made by OpenSSL.
        func identity() throws -> (certificate: String, key: String) {
            let made = try ChildProcess.run(
                "/usr/bin/openssl",
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "identity-key.pem",
                    "-out", "identity.pem", "-subj", "/CN=127.0.0.1", "-days", "1",
                ], directory: URL(fileURLWithPath: directory))
            #expect(made.status == 0, "\(made.stderr)")
            #expect(chmod(directory + "/identity.pem", 0o644) == 0)
            return (directory + "/identity.pem", directory + "/identity-key.pem")
        }
    }

    /// A setting that names a secret file, and the environment that makes the service read it.
    struct SecretSetting: CustomTestStringConvertible, Sendable {
        let name: String
        /// What the file holds when it is not the key of `Files.identity()`.
        let contents: String
        let environment: @Sendable (_ secret: String, _ identity: (certificate: String, key: String)) -> [String: String]

        var testDescription: String { name }

        static let all: [SecretSetting] = [
            SecretSetting(name: "PAYWARDEN_PIN_FILE", contents: "123456\n") { secret, _ in ["PAYWARDEN_PIN_FILE": secret] },
            SecretSetting(name: "PAYWARDEN_DATABASE_PASSWORD_FILE", contents: "db-s3cret\n") { secret, _ in
                ["PAYWARDEN_DATABASE_URL": "postgres://paywarden@db.example:5432/vault", "PAYWARDEN_DATABASE_PASSWORD_FILE": secret]
            },
            SecretSetting(name: "PAYWARDEN_RELAY_CNP_UPSTREAM_PASSWORD_FILE", contents: "cnp-s3cret\n") { secret, _ in
                [
                    "PAYWARDEN_RELAY_CNP_UPSTREAM": "http://127.0.0.1:9999", "PAYWARDEN_RELAY_CNP_MERCHANT_IDS": "example=01234",
                    "PAYWARDEN_RELAY_CNP_UPSTREAM_USER": "relay", "PAYWARDEN_RELAY_CNP_UPSTREAM_PASSWORD_FILE": secret,
                ]
            },
            SecretSetting(name: "PAYWARDEN_RELAY_RADIAL_UPSTREAM_API_KEY_FILE", contents: "radial-s3cret\n") { secret, _ in
                [
                    "PAYWARDEN_RELAY_RADIAL_UPSTREAM": "https://radial.example.com", "PAYWARDEN_RELAY_RADIAL_STORE_IDS": "example=TMSUS",
                    "PAYWARDEN_RELAY_RADIAL_UPSTREAM_API_KEY_FILE": secret,
                ]
            },
            SecretSetting(name: "PAYWARDEN_TLS_PRIVATE_KEY", contents: "") { secret, identity in
                ["PAYWARDEN_TLS_CERTIFICATE": identity.certificate, "PAYWARDEN_TLS_PRIVATE_KEY": secret]
            },
            SecretSetting(name: "PAYWARDEN_RELAY_CNP_UPSTREAM_CLIENT_KEY", contents: "") { secret, identity in
                [
                    "PAYWARDEN_RELAY_CNP_UPSTREAM": "http://127.0.0.1:9999", "PAYWARDEN_RELAY_CNP_MERCHANT_IDS": "example=01234",
                    "PAYWARDEN_RELAY_CNP_UPSTREAM_CLIENT_CERTIFICATE": identity.certificate,
                    "PAYWARDEN_RELAY_CNP_UPSTREAM_CLIENT_KEY": secret,
                ]
            },
        ]
    }

    func start(_ environment: [String: String]) async throws -> ServerConfiguration {
        try ServerConfiguration(settings: await PaywardenSettings.load(environment: environment))
    }

    func expectRefusal(
        _ environment: [String: String], naming names: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let error = await #expect(throws: ConfigurationError.self, "\(environment)", sourceLocation: sourceLocation) {
            _ = try await start(environment)
        }
        for name in names {
            #expect(error?.message.contains(name) == true, "\(error?.message ?? "") should name \(name)", sourceLocation: sourceLocation)
        }
    }

    /// The review's reproduction: a PIN file left 0644 by the default umask.
    @Test func aPINFileReadableByOthersRefusesTheStartSayingHowToFixIt() async throws {
        let files = try Files()
        let pin = try files.file("user.pin", "123456\n", mode: 0o644)
        await expectRefusal(["PAYWARDEN_PIN_FILE": pin], naming: ["PAYWARDEN_PIN_FILE", "chmod 600 \(pin)"])
    }

    @Test(arguments: SecretSetting.all)
    func aSecretFileMustBeItsOwnersAlone(_ setting: SecretSetting) async throws {
        let files = try Files()
        let identity = try files.identity()
        let contents = setting.contents.isEmpty ? try String(contentsOfFile: identity.key, encoding: .utf8) : setting.contents
        func secret(_ mode: mode_t) throws -> String { try files.file("secret-\(String(mode, radix: 8))", contents, mode: mode) }

        for mode: mode_t in [0o600, 0o400] {
            let path = try secret(mode)
            _ = try await start(setting.environment(path, identity))
        }
        let ownLink = try files.link("link-to-0600", to: try secret(0o600))
        _ = try await start(setting.environment(ownLink, identity))

        for mode: mode_t in [0o644, 0o640, 0o604, 0o620] {
            let path = try secret(mode)
            await expectRefusal(setting.environment(path, identity), naming: [setting.name, path, "chmod 600 \(path)"])
        }
        // The link is ours, but the file it leads to is readable by others: the target is named.
        let exposed = try secret(0o644)
        let linkToExposed = try files.link("link-to-0644", to: exposed)
        await expectRefusal(setting.environment(linkToExposed, identity), naming: [setting.name, "chmod 600 \(exposed)"])
    }

    /// Certificates and CA bundles are public: any mode passes.
    @Test func certificatesAreNotSecrets() async throws {
        let files = try Files()
        let identity = try files.identity()
        #expect(chmod(identity.key, 0o600) == 0)
        #expect(chmod(identity.certificate, 0o644) == 0)
        let configuration = try await start([
            "PAYWARDEN_TLS_CERTIFICATE": identity.certificate, "PAYWARDEN_TLS_PRIVATE_KEY": identity.key,
            "PAYWARDEN_TLS_CLIENT_CA": identity.certificate, "PAYWARDEN_TLS_REQUIRE_CLIENT_CERTIFICATE": "true",
        ])
        #expect(configuration.tls?.requireClientCertificate == true)
    }

    /// The PKCS#11 layer reads the PIN file at every login, wherever its path came from (the
    /// setting, `--pin-file`, a `pkcs11:` URI's `pin-source`): it refuses an exposed one as well.
    @Test func thePINIsNotReadFromAFileOthersCanRead() throws {
        let files = try Files()
        let owned = try files.file("owned.pin", "123456\n", mode: 0o600)
        #expect(try PINSource.file(owned).read() == Array("123456".utf8))
        let exposed = try files.file("exposed.pin", "123456\n", mode: 0o644)
        let error = #expect(throws: PKCS11Error.self) { try PINSource.file(exposed).read() }
        #expect(error?.category == .misconfiguration)
        #expect(error?.message.contains("chmod 600 \(exposed)") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("123456") == false)
    }

    /// A PIN file named by a `pkcs11:` URI's `pin-source` is a secret file too.
    @Test func aPINSourceInTheTokenURIIsChecked() async throws {
        let files = try Files()
        let exposed = try files.file("uri.pin", "123456\n", mode: 0o644)
        await expectRefusal(
            ["PAYWARDEN_TOKEN_LABEL": "pkcs11:token=paywarden?pin-source=file:\(exposed)"],
            naming: ["PAYWARDEN_TOKEN_LABEL", "chmod 600 \(exposed)"])
    }

    /// As root, a file or a link can be given to another user: both are refused (the owner of a
    /// link decides what it leads to). Run as another user, `chown` is not allowed, and
    /// ``SecretFileRuleTests`` covers the rule itself.
    @Test(.enabled(if: getuid() == 0, "needs root to give a file to another user"))
    func aFileOrALinkOwnedByAnotherUserIsRefused() async throws {
        let files = try Files()
        let nobody: uid_t = 65534
        let theirs = try files.file("theirs.pin", "123456\n", mode: 0o600)
        #expect(chown(theirs, nobody, gid_t(nobody)) == 0)
        await expectRefusal(["PAYWARDEN_PIN_FILE": theirs], naming: ["PAYWARDEN_PIN_FILE", theirs, "owned by"])

        let ours = try files.file("ours.pin", "123456\n", mode: 0o600)
        let theirLink = try files.link("their-link.pin", to: ours)
        #expect(lchown(theirLink, nobody, gid_t(nobody)) == 0)
        await expectRefusal(["PAYWARDEN_PIN_FILE": theirLink], naming: ["PAYWARDEN_PIN_FILE", theirLink, "link"])

        // Their link in the middle of a chain of our links: every link is held to the rule.
        let ourLink = try files.link("our-link.pin", to: theirLink)
        await expectRefusal(["PAYWARDEN_PIN_FILE": ourLink], naming: ["PAYWARDEN_PIN_FILE", ourLink, "leads through", theirLink])
        #expect(throws: PKCS11Error.self) { try PINSource.file(ourLink).read() }
    }
}
