import KeyCustody
import PaywardenStorage

/// What merchant-token usage information needs beyond the merchant-token service: where it is
/// stored, the merchants' HPKE sender keys, and the base URL devices fetch packages from.
public struct UsageInformationConfiguration: Sendable {
    public let store: any UsageInformationStore
    public let senderKeys: SenderKeys
    /// `PAYWARDEN_PUBLIC_URL`: the `webServiceURL` Apple hands to devices.
    public let publicURL: String
    /// Make new sender keys wrapped by an HSM key even where the HSM could hold them (tests, and
    /// HSMs whose P-384 ECDH an operator does not trust).
    public let forceWrappedSenderKeys: Bool

    public init(store: any UsageInformationStore, senderKeys: SenderKeys, publicURL: String, forceWrappedSenderKeys: Bool = false) {
        self.store = store
        self.senderKeys = senderKeys
        self.publicURL = publicURL
        self.forceWrappedSenderKeys = forceWrappedSenderKeys
    }
}
