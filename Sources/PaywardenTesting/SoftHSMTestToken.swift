import Foundation
import Logging
import PKCS11

/// A SoftHSM token in a temporary directory, for tests and benchmarks.
///
/// SoftHSM reads `SOFTHSM2_CONF` once, when the module is first initialised, so every token of
/// a process lives in one temporary token directory; each gets its own label and PIN file.
/// Tests that open tokens must not run in parallel with each other: `C_Finalize` is process-wide.
public struct SoftHSMTestToken: Sendable {
    public let label: String
    public let pinFile: String
    public let directory: String

    /// Debian's SoftHSM 2 module.
    public static let modulePath = "/usr/lib/softhsm/libsofthsm2.so"

    /// The configuration for this token: two workers, software OAEP decoding allowed (SoftHSM
    /// lacks OAEP-SHA256), extractable ECDH not allowed.
    public var configuration: HSMConfiguration {
        var configuration = HSMConfiguration(modulePath: Self.modulePath, tokenLabel: label, pin: .file(pinFile))
        configuration.workers = 2
        configuration.maxPendingOperations = 4096
        configuration.allowSoftwareOAEPDecoding = true
        return configuration
    }

    /// Creates a fresh token with a random label and PIN.
    public static func make(labelPrefix: String = "test") async throws -> SoftHSMTestToken {
        let directory = sharedDirectory
        let label = "\(labelPrefix)-\(UUID().uuidString.prefix(8))"
        let pin = Array(UUID().uuidString.prefix(12).utf8)
        let pinFile = directory + "/\(label).pin"
        guard FileManager.default.createFile(atPath: pinFile, contents: Data(pin), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown)
        }
        _ = try await TokenInitializer.ensureToken(
            modulePath: Self.modulePath, label: label,
            securityOfficerPIN: Array("so-\(label)".utf8), userPIN: pin
        )
        let token = SoftHSMTestToken(label: label, pinFile: pinFile, directory: directory)
        TestResources.track(token)
        return token
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

    /// The directory SoftHSM keeps this token's objects in (found by the label in token.object),
    /// so a test can take the token away from a running service and give it back.
    public func storeDirectory() -> String? {
        let tokens = directory + "/tokens"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: tokens)) ?? []
        return entries.map { tokens + "/" + $0 }.first { path in
            FileManager.default.contents(atPath: path + "/token.object")?.range(of: Data(label.utf8)) != nil
        }
    }

    /// Removes this token's objects and PIN file. Call once no HSM has the token open: SoftHSM
    /// finalises the module when the last user closes, so nothing holds the files then.
    public func destroy() {
        if let store = storeDirectory() { try? FileManager.default.removeItem(atPath: store) }
        try? FileManager.default.removeItem(atPath: pinFile)
    }

    /// The process-wide SoftHSM configuration directory, created on first use.
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
