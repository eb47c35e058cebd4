import CPKCS11

/// Initialises a token in a free slot and sets its user PIN, through PKCS#11 itself
/// (`C_InitToken`, then `C_InitPIN` as the security officer).
///
/// A module whose token is created by its configuration rather than by `C_InitToken` (NSS
/// softokn makes its database, labelled as `pReserved` says, on `C_Initialize`) shows a token
/// with that label that is not initialised yet: it only needs its user PIN, set as the security
/// officer (whose PIN is empty on a new NSS database).
///
/// It initialises and finalises the module, so no ``HSM`` may be open on the same module in
/// this process while it runs.
public enum TokenInitializer {
    public enum Outcome: Sendable, Equatable {
        case created(TokenInfo)
        case alreadyPresent(TokenInfo)
    }

    /// Creates the token labelled `label` unless it exists. Idempotent.
    public static func ensureToken(
        modulePath: String, initReserved: String? = nil, label: String, securityOfficerPIN: [UInt8], userPIN: [UInt8]
    ) async throws(PKCS11Error) -> Outcome {
        do {
            return try await DedicatedThread.run(name: "pkcs11-token-init") { () throws(PKCS11Error) -> Outcome in
                let module = try PKCS11Module.load(path: modulePath)
                try module.initialize(reserved: initReserved)
                defer { module.finalize() }
                if let existing = try module.presentTokens().first(where: { $0.label == label }) {
                    if existing.isInitialized && existing.isUserPINInitialized { return .alreadyPresent(existing) }
                    return .created(try setUserPIN(module, existing.slot, securityOfficerPIN: securityOfficerPIN, userPIN: userPIN))
                }
                var free: SlotID?
                for slot in try module.slots(tokenPresent: true) where try !module.tokenInfo(slot: slot).isInitialized {
                    free = slot
                    break
                }
                guard let slot = free else {
                    throw PKCS11Error(
                        code: .tokenNotFound, category: .misconfiguration,
                        message: "the module has no free slot for a new token")
                }
                var paddedLabel = Array(label.utf8.prefix(32))
                paddedLabel += [UInt8](repeating: 0x20, count: 32 - paddedLabel.count)
                var soPIN = securityOfficerPIN
                let rv = soPIN.withUnsafeMutableBufferPointer { pin in
                    paddedLabel.withUnsafeMutableBufferPointer {
                        module.functions.pointee.C_InitToken(slot.rawValue, pin.baseAddress, CK_ULONG(pin.count), $0.baseAddress)
                    }
                }
                try check("C_InitToken", rv)
                // SoftHSM moves a newly initialised token to another slot id: find it by label.
                guard let created = try module.tokens().first(where: { $0.label == label }) else {
                    throw PKCS11Error(code: .tokenNotFound, category: .retry, message: "the token was initialised but is not visible")
                }
                return .created(try setUserPIN(module, created.slot, securityOfficerPIN: securityOfficerPIN, userPIN: userPIN))
            }
        } catch let error as PKCS11Error {
            throw error
        } catch {
            throw PKCS11Error(code: .moduleInvalid, category: .misconfiguration, message: "\(error)")
        }
    }

    /// `C_InitPIN` as the security officer; the token's information after.
    private static func setUserPIN(_ module: PKCS11Module, _ slot: SlotID, securityOfficerPIN: [UInt8], userPIN: [UInt8])
        throws(PKCS11Error) -> TokenInfo
    {
        let session = try Session(module: module, slot: slot)
        try session.login(securityOfficerPIN: securityOfficerPIN)
        try session.initializeUserPIN(userPIN)
        session.logout()
        return try module.tokenInfo(slot: slot)
    }
}
