import Foundation
import PKCS11
import PaywardenConfiguration
import PaywardenSandbox

/// What `dev-hsm sandbox` checks before it writes anything: the sandbox's keys are active keys
/// certified by the development PKI, written with their records and a paypage into whatever HSM
/// and database the settings name, so the settings must name the development token `dev-hsm init`
/// made (not an operator's HSM beside which a development token happens to exist), its home's
/// SQLite database, and the development PKI as the only trust root (not Apple's). Each refusal is
/// a misconfiguration that says what to source or unset.
struct DevelopmentGuard {
    let settings: PaywardenSettings
    let token: DevelopmentToken
    let pkiDirectory: String

    func check(_ hsm: HSM) throws {
        try checkToken(hsm)
        try checkDatabase()
        try checkTrust()
    }

    private var advice: String {
        "source the development token's env file (`set -a; . \(token.environmentFile); set +a`), which `paywarden dev-hsm init "
            + "--backend \(token.backend.rawValue)` writes"
    }

    /// The token is the one in the development directory: SoftHSM reads its token store from
    /// `SOFTHSM2_CONF`, which must be the development configuration (naming the development token
    /// store); NSS softokn from its initialisation string, which must be the development one.
    private func checkToken(_ hsm: HSM) throws {
        let info = hsm.token
        func refuse(_ why: String) -> CommandFailure {
            CommandFailure(
                .misconfiguration,
                "the HSM the settings name is not the development token of \(token.directory): \(why); the sandbox writes "
                    + "development-certified keys and records only there: \(advice)")
        }
        guard info.label == token.label else { throw refuse("its label is \"\(info.label)\", not \"\(token.label)\"") }
        switch token.backend {
        case .softhsm:
            guard info.manufacturer.hasPrefix("SoftHSM") else { throw refuse("it is \(info.manufacturer) \(info.model), not SoftHSM") }
            let configuration = ProcessInfo.processInfo.environment["SOFTHSM2_CONF"] ?? ""
            guard Self.samePath(configuration, token.configurationFile) else {
                throw refuse("SOFTHSM2_CONF is \(configuration.isEmpty ? "unset" : configuration), not \(token.configurationFile)")
            }
            guard let store = Self.softHSMTokenDirectory(configuration), Self.samePath(store, token.tokenDirectory) else {
                throw refuse("\(configuration) does not keep its tokens in \(token.tokenDirectory)")
            }
        case .nss:
            guard info.manufacturer.hasPrefix("Mozilla") else { throw refuse("it is \(info.manufacturer) \(info.model), not NSS softokn") }
            guard settings.hsm.initReserved == token.initReserved else {
                throw refuse("\(SettingCatalog.pkcs11InitReserved.environmentName) does not name the database in \(token.tokenDirectory)")
            }
        }
    }

    private func checkDatabase() throws {
        let expected = settings.home + "/paywarden.sqlite"
        if case .sqlite(let path) = settings.database.location, Self.samePath(path, expected) { return }
        throw CommandFailure(
            .misconfiguration,
            "\(SettingCatalog.databaseURL.environmentName) names another database than the development home's \(expected): the "
                + "sandbox writes key records and a paypage only there; unset it")
    }

    private func checkTrust() throws {
        let root = DevelopmentPKI.rootFile(in: pkiDirectory)
        let roots = settings.verification.trustRoots
        // The PKI itself may be missing (deleted, or never made by an older `dev-hsm init`): the
        // sandbox makes it where the trust already points.
        guard roots.count == 1, let only = roots.first, Self.samePath(only, root) else {
            throw CommandFailure(
                .misconfiguration,
                "\(SettingCatalog.trustRoots.environmentName) must name the development PKI's root \(root) alone"
                    + (roots.isEmpty ? " (it is unset: Apple's root)" : " (it names \(roots.joined(separator: ", ")))")
                    + ": the sandbox's keys are certified by that PKI and belong to a configuration that decrypts no real token; "
                    + advice)
        }
    }

    /// `directories.tokendir` of a SoftHSM configuration file.
    static func softHSMTokenDirectory(_ configurationFile: String) -> String? {
        guard let text = try? String(contentsOfFile: configurationFile, encoding: .utf8) else { return nil }
        for line in text.split(whereSeparator: \.isNewline) {
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2, parts[0] == "directories.tokendir" { return parts[1] }
        }
        return nil
    }

    /// Whether two paths name the same file once symbolic links and `..` are resolved.
    static func samePath(_ first: String, _ second: String) -> Bool {
        guard !first.isEmpty, !second.isEmpty else { return false }
        func resolved(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path }
        return resolved(first) == resolved(second)
    }
}
