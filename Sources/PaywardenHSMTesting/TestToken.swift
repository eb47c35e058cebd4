import Foundation
import Logging
import PKCS11

/// Which PKCS#11 implementation a test's token is in. `make test` runs every suite on SoftHSM
/// and the HSM-touching suites again on NSS softokn (`PAYWARDEN_TEST_HSM=nss`), so no behaviour
/// of Paywarden rests on one implementation's habits.
public enum HSMTestBackend: String, Sendable, CaseIterable {
    case softHSM = "softhsm"
    case nss

    /// The backend of this test run: `PAYWARDEN_TEST_HSM` (softhsm when unset).
    public static let current: HSMTestBackend = {
        let name = ProcessInfo.processInfo.environment["PAYWARDEN_TEST_HSM"] ?? ""
        guard !name.isEmpty else { return .softHSM }
        guard let backend = HSMTestBackend(rawValue: name) else {
            fatalError("PAYWARDEN_TEST_HSM=\(name): expected softhsm or nss")
        }
        return backend
    }()

    /// The implementation's PKCS#11 library (Debian's packages).
    public var modulePath: String {
        switch self {
        case .softHSM: "/usr/lib/softhsm/libsofthsm2.so"
        case .nss: NSSSoftoken.debianModulePath
        }
    }
}

/// A token in a temporary directory, for tests and benchmarks, in SoftHSM or NSS softokn.
///
/// SoftHSM reads `SOFTHSM2_CONF` once, when the module is first initialised, so every SoftHSM
/// token of a process lives in one temporary token directory; each gets its own label and PIN
/// file. An NSS token is a database directory of its own, named with its label in the
/// `C_Initialize` arguments (`PAYWARDEN_PKCS11_INIT_RESERVED`), so a process has one NSS token
/// open at a time. Tests that open tokens must not run in parallel with each other: `C_Finalize`
/// is process-wide.
public struct TestToken: Sendable {
    public let backend: HSMTestBackend
    public let label: String
    public let pinFile: String
    /// The process's token directory (SoftHSM's configuration and stores, NSS's databases).
    public let directory: String
    /// NSS softokn's `C_Initialize` arguments; nil for SoftHSM.
    public let initReserved: String?

    /// Debian's SoftHSM 2 module.
    public static let softHSMModulePath = HSMTestBackend.softHSM.modulePath

    public var modulePath: String { backend.modulePath }

    /// The configuration for this token: two workers; software OAEP decoding allowed only on
    /// SoftHSM (which lacks OAEP-SHA256; NSS has it), extractable ECDH never.
    public var configuration: HSMConfiguration {
        var configuration = HSMConfiguration(modulePath: modulePath, tokenLabel: label, pin: .file(pinFile))
        configuration.initReserved = initReserved
        configuration.workers = 2
        configuration.maxPendingOperations = 4096
        configuration.allowSoftwareOAEPDecoding = backend == .softHSM
        return configuration
    }

    /// The settings an operator exports for this token (module, its arguments, token, PIN file).
    public var environment: [String: String] {
        var environment = [
            "PAYWARDEN_PKCS11_MODULE": modulePath, "PAYWARDEN_TOKEN_LABEL": label, "PAYWARDEN_PIN_FILE": pinFile,
        ]
        switch backend {
        case .softHSM:
            environment["SOFTHSM2_CONF"] = directory + "/softhsm2.conf"
            environment["PAYWARDEN_HSM_ALLOW_SOFTWARE_OAEP"] = "true"
        case .nss:
            environment["PAYWARDEN_PKCS11_INIT_RESERVED"] = initReserved
        }
        return environment
    }

    /// Creates a fresh token with a random label and PIN, in `backend` (this run's by default).
    public static func make(labelPrefix: String = "test", backend: HSMTestBackend = .current) async throws -> TestToken {
        let directory = sharedDirectory
        let label = "\(labelPrefix)-\(UUID().uuidString.prefix(8))"
        let pin = Array(UUID().uuidString.prefix(12).utf8)
        let pinFile = directory + "/\(label).pin"
        guard FileManager.default.createFile(atPath: pinFile, contents: Data(pin), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown)
        }
        let token: TestToken
        switch backend {
        case .softHSM:
            token = TestToken(backend: backend, label: label, pinFile: pinFile, directory: directory, initReserved: nil)
            _ = try await TokenInitializer.ensureToken(
                modulePath: token.modulePath, label: label, securityOfficerPIN: Array("so-\(label)".utf8), userPIN: pin)
        case .nss:
            let database = directory + "/nss-" + label
            try FileManager.default.createDirectory(atPath: database, withIntermediateDirectories: true)
            token = TestToken(
                backend: backend, label: label, pinFile: pinFile, directory: directory,
                initReserved: NSSSoftoken.initReserved(databaseDirectory: database, tokenLabel: label))
            // A new NSS database has an empty security officer PIN, which sets the user PIN.
            _ = try await TokenInitializer.ensureToken(
                modulePath: token.modulePath, initReserved: token.initReserved, label: label, securityOfficerPIN: [], userPIN: pin)
        }
        TestResources.track(token)
        return token
    }

    /// Runs `body` on a fresh token's open HSM, then closes the HSM and destroys the token,
    /// whether `body` returned or threw.
    public static func withOpenHSM(labelPrefix: String, _ body: (HSM) async throws -> Void) async throws {
        let token = try await make(labelPrefix: labelPrefix)
        let hsm = try await token.open()
        do {
            try await body(hsm)
        } catch {
            await hsm.close()
            token.destroy()
            throw error
        }
        await hsm.close()
        token.destroy()
    }

    /// Opens the token with this configuration, adjusted by `adjust`.
    public func open(_ adjust: @Sendable (inout HSMConfiguration) -> Void = { _ in }) async throws -> HSM {
        try await Self.open(configuration, adjust)
    }

    /// Opens an HSM as tests do (warnings logged, closed by the `.releasesTestResources` trait).
    static func open(_ configuration: HSMConfiguration, _ adjust: @Sendable (inout HSMConfiguration) -> Void) async throws -> HSM {
        var configuration = configuration
        adjust(&configuration)
        var logger = Logger(label: "paywarden.hsm.test")
        logger.logLevel = .warning
        let hsm = try await HSM.open(configuration, logger: logger)
        TestResources.track(hsm)
        return hsm
    }

    /// The directory the token keeps its objects in (SoftHSM: found by the label in token.object;
    /// NSS: its database), so a test can take the token away from a running service and give it back.
    public func storeDirectory() -> String? {
        if backend == .nss { return directory + "/nss-" + label }
        let tokens = directory + "/tokens"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: tokens)) ?? []
        return entries.map { tokens + "/" + $0 }.first { path in
            FileManager.default.contents(atPath: path + "/token.object")?.range(of: Data(label.utf8)) != nil
        }
    }

    /// Removes this token's objects and PIN file. Call once no HSM has the token open: the module
    /// is finalised when the last user closes, so nothing holds the files then.
    public func destroy() {
        if let store = storeDirectory() { try? FileManager.default.removeItem(atPath: store) }
        try? FileManager.default.removeItem(atPath: pinFile)
    }

    /// The process-wide token directory (and SoftHSM configuration), created on first use.
    public static let sharedDirectory: String = {
        let directory =
            NSTemporaryDirectory() + "paywarden-softhsm-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(6))"
        try? FileManager.default.createDirectory(atPath: directory + "/tokens", withIntermediateDirectories: true)
        let configuration = """
            directories.tokendir = \(directory)/tokens
            objectstore.backend = file
            log.level = ERROR
            slots.removable = false

            """
        _ = FileManager.default.createFile(atPath: directory + "/softhsm2.conf", contents: Data(configuration.utf8))
        setenv("SOFTHSM2_CONF", directory + "/softhsm2.conf", 1)
        return directory
    }()

    /// Removes the process's token directory. Call once, when no token is open.
    public static func removeAll() {
        try? FileManager.default.removeItem(atPath: sharedDirectory)
    }
}

/// Tokens for tests true of SoftHSM only (its file store, its mechanisms, the fault-injecting
/// module that forwards to it): they say so by name.
public enum SoftHSMTestToken {
    public static let modulePath = TestToken.softHSMModulePath

    public static func make(labelPrefix: String = "test") async throws -> TestToken {
        try await TestToken.make(labelPrefix: labelPrefix, backend: .softHSM)
    }
}
