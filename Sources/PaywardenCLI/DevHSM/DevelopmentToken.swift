import Foundation
import PKCS11
import PaywardenConfiguration
import PaywardenServer

/// The local SoftHSM development token: its configuration, token store and PIN files under
/// the Paywarden home, in `softhsm/`.
struct DevelopmentToken {
    let home: String
    let label: String
    let modulePath: String

    var directory: String { home + "/softhsm" }
    var configurationFile: String { directory + "/softhsm2.conf" }
    var tokenDirectory: String { directory + "/tokens" }
    var userPINFile: String { directory + "/user.pin" }
    var securityOfficerPINFile: String { directory + "/so.pin" }
    var environmentFile: String { directory + "/env" }
    /// A development API key (clear text, 0600) and its configuration entry.
    var apiKeyFile: String { directory + "/dev-api-key" }
    var apiKeyEntryFile: String { directory + "/dev-api-key.entry" }

    /// The environment a shell needs to use this token (and the service, its API key).
    var exports: [(String, String)] {
        let apiKeys = (try? String(contentsOfFile: apiKeyEntryFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        typealias C = SettingCatalog
        return [
            ("SOFTHSM2_CONF", configurationFile),
            (C.home.environmentName, home),
            (C.pkcs11Module.environmentName, modulePath),
            (C.tokenLabel.environmentName, label),
            (C.pinFile.environmentName, userPINFile),
            // SoftHSM 2.6.1 has no OAEP-SHA256: RSA_v1 needs raw RSA with OpenSSL's OAEP decoding.
            (C.hsmAllowSoftwareOAEP.environmentName, "true"),
        ] + (apiKeys.map { [(C.apiKeys.environmentName, $0)] } ?? [])
    }

    /// Creates what is missing; leaves what exists alone.
    func prepareFiles() throws {
        let files = FileManager.default
        try files.createDirectory(atPath: tokenDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if !files.fileExists(atPath: configurationFile) {
            let text = """
                # SoftHSM2 configuration for Paywarden's development token (created by paywarden dev-hsm init)
                directories.tokendir = \(tokenDirectory)
                objectstore.backend = file
                log.level = ERROR
                slots.removable = false

                """
            try write(text, to: configurationFile, mode: 0o600)
        }
        for file in [userPINFile, securityOfficerPINFile] where !files.fileExists(atPath: file) {
            try write(Self.randomPIN(), to: file, mode: 0o600)
        }
        if !files.fileExists(atPath: apiKeyFile) {
            let (key, entry) = APIKey.generate(name: "dev", scopes: [.decrypt])
            try write(key + "\n", to: apiKeyFile, mode: 0o600)
            try write(entry + "\n", to: apiKeyEntryFile, mode: 0o600)
        }
        let exportsText = exports.map { "export \($0.0)=\(shellQuoted($0.1))" }.joined(separator: "\n") + "\n"
        try write(exportsText, to: environmentFile, mode: 0o600)
    }

    func readPIN(_ file: String) throws -> [UInt8] {
        try PINSource.file(file).read()
    }

    private func write(_ text: String, to path: String, mode: Int) throws {
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
