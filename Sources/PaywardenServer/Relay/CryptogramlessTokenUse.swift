import PaywardenStorage

/// What a relay does with a high-value token presented without a cryptogram to send: its held one
/// was used, expired or purged, or it never had one. Kept apart so the rule shared by the three
/// relays can take its place.
///
/// - A merchant token (MPAN) is a card-on-file credential the network issued for the merchant: it
///   goes as a stored credential, the account number and expiry without a cryptogram.
/// - A device account number (DPAN) is bound to the device, and a network authorizes it with the
///   device's cryptogram; Radial's card-not-present request carries that cryptogram only in
///   `SecureVerificationData`, and processor-apis.md §3 sends a DPAN with it and never without. Such
///   a use is refused (`cryptogram_required`, 422), and nothing is sent.
enum CryptogramlessTokenUse: Sendable, Equatable {
    case storedCredential
    case refused(code: String, message: String)

    static let cryptogramRequired = "cryptogram_required"

    static func rule(for kind: TokenRecord.AccountKind) -> CryptogramlessTokenUse {
        switch kind {
        case .merchantPAN: .storedCredential
        case .devicePAN:
            .refused(
                code: cryptogramRequired,
                message: "the token stands for a device account number, which authorizes only with the cryptogram of a "
                    + "decryptblob answered within 24 hours, once; a new Apple Pay payment (decryptblob or DW.xml) brings a new one")
        }
    }
}
