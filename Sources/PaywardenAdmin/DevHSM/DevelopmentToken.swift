import ArgumentParser
import Foundation
import PKCS11
import PaywardenConfiguration
import PaywardenSandbox
import PaywardenServices

/// The local development token: its configuration, token store and PIN files under the
/// Paywarden home, in `softhsm/` (SoftHSM 2) or `nss/` (NSS softokn, a second PKCS#11
/// implementation, whose database and token label are named in `C_Initialize`'s arguments).
struct DevelopmentToken {
    /// The PKCS#11 implementation the development token is in.
    enum Backend: String, ExpressibleByArgument, CaseIterable {
        case softhsm
        case nss
    }

    let home: String
    let label: String
    let modulePath: String
    var backend = Backend.softhsm

    var directory: String { home + "/" + backend.rawValue }
    var configurationFile: String { directory + "/softhsm2.conf" }
    var tokenDirectory: String { directory + (backend == .nss ? "/db" : "/tokens") }

    /// NSS softokn's `C_Initialize` arguments: its database and the token's label; nil for SoftHSM.
    var initReserved: String? {
        guard backend == .nss else { return nil }
        return NSSSoftoken.initReserved(databaseDirectory: tokenDirectory, tokenLabel: label)
    }
    var userPINFile: String { directory + "/user.pin" }
    var securityOfficerPINFile: String { directory + "/so.pin" }
    var environmentFile: String { directory + "/env" }
    /// A development API key (clear text, 0600) and its configuration entry.
    var apiKeyFile: String { directory + "/dev-api-key" }
    var apiKeyEntryFile: String { directory + "/dev-api-key.entry" }
    /// The key as an HTTP header line (0600), for `curl -H @FILE`: the key stays out of argv.
    var apiKeyHeaderFile: String { directory + "/dev-api-key.header" }

    /// The environment a shell needs to use this token (and the service, its API key).
    var exports: [(String, String)] {
        let sandbox = Sandbox.Layout(tokenDirectory: directory)
        // The development key, and the sandbox merchant server's once `dev-hsm sandbox` made it.
        let apiKeys = [apiKeyEntryFile, sandbox.apiKeyEntryFile]
            .compactMap { try? String(contentsOfFile: $0, encoding: .utf8) }
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        typealias C = SettingCatalog
        let module: [(String, String)]
        switch backend {
        case .softhsm:
            module = [
                ("SOFTHSM2_CONF", configurationFile), (C.pkcs11Module.environmentName, modulePath),
                // SoftHSM 2.6.1 has no OAEP-SHA256: RSA_v1 needs raw RSA with OpenSSL's OAEP decoding.
                (C.hsmAllowSoftwareOAEP.environmentName, "true"),
            ]
        case .nss:
            // NSS decrypts RSA-OAEP-SHA256 itself: nothing is allowed beyond the defaults.
            module = [(C.pkcs11Module.environmentName, modulePath), (C.pkcs11InitReserved.environmentName, initReserved ?? "")]
        }
        return [(C.home.environmentName, home)] + module + [
            (C.tokenLabel.environmentName, label),
            (C.pinFile.environmentName, userPINFile),
        ] + (apiKeys.isEmpty ? [] : [(C.apiKeys.environmentName, apiKeys.joined(separator: ","))])
            + (DevelopmentPKI.exists(in: sandbox.pkiDirectory) ? Sandbox.trustSettings(sandbox) : [])
            + ((try? sandbox.load())?.map { $0.settings(sandbox) } ?? [])
    }

    /// Creates what is missing; leaves what exists alone.
    func prepareFiles() throws {
        let files = FileManager.default
        try files.createDirectory(atPath: tokenDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if backend == .softhsm, !files.fileExists(atPath: configurationFile) {
            let text = """
                # SoftHSM2 configuration for Paywarden's development token (created by paywarden dev-hsm init)
                directories.tokendir = \(tokenDirectory)
                objectstore.backend = file
                log.level = ERROR
                slots.removable = false

                """
            try write(text, to: configurationFile, mode: 0o600)
        }
        // A new NSS database's security officer PIN is empty; it sets the user PIN, which is then both.
        for file in backend == .nss ? [userPINFile] : [userPINFile, securityOfficerPINFile] where !files.fileExists(atPath: file) {
            try write(Self.randomPIN(), to: file, mode: 0o600)
        }
        if !files.fileExists(atPath: apiKeyFile) {
            let (key, entry) = APIKey.generate(name: "dev", scopes: [.decrypt])
            try write(key + "\n", to: apiKeyFile, mode: 0o600)
            try write(entry + "\n", to: apiKeyEntryFile, mode: 0o600)
        }
        if !files.fileExists(atPath: apiKeyHeaderFile), let key = try? String(contentsOfFile: apiKeyFile, encoding: .utf8) {
            try write("Authorization: Bearer \(key.trimmingCharacters(in: .whitespacesAndNewlines))\n", to: apiKeyHeaderFile, mode: 0o600)
        }
        try writeEnvironment()
    }

    /// Makes the development PKI beside the token (or renews it near its expiry), which the
    /// environment then names as the only trust: a configuration made from this token decrypts
    /// tokens that PKI signed and no real one, and `dev-hsm sandbox` writes only under it.
    func prepareDevelopmentPKI() throws {
        let layout = Sandbox.Layout(tokenDirectory: directory)
        try FileManager.default.createDirectory(
            atPath: layout.directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        _ = try DevelopmentPKI.loadOrCreate(in: layout.pkiDirectory)
        try writeEnvironment()
    }

    /// Writes `env`, the file a shell sources: ``exports``.
    func writeEnvironment() throws {
        let exportsText = exports.map { "export \($0.0)=\(shellQuoted($0.1))" }.joined(separator: "\n") + "\n"
        try write(exportsText, to: environmentFile, mode: 0o600)
    }

    func readPIN(_ file: String) throws -> [UInt8] {
        try PINSource.file(file).read()
    }

    /// Writes `text` to `path` with `mode`, whether the file existed or not.
    func write(_ text: String, to path: String, mode: Int) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: mode]) else {
            throw CommandFailure(.misconfiguration, "cannot write \(path); check that \(home) is writable")
        }
        // createFile keeps an existing file's mode; make sure secrets are 0600 either way.
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    }

    private static func randomPIN() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<20).map { _ in String(Int.random(in: 0...9, using: &generator)) }.joined()
    }
}

func shellQuoted(_ value: String) -> String {
    if value.allSatisfy({ $0.isLetter || $0.isNumber || "/._-:+=".contains($0) }) { return value }
    return "'" + value.replacingOccurrences(of: "'", with: "'\\''") + "'"
}
