/// Merchant-token usage information and the merchants' sender keys.
public protocol UsageInformationStore: Sendable {
    func usageInformationSenderKey(merchantID: String) async throws(StorageError) -> UsageInformationSenderKeyRecord?
    /// `.conflict` when the merchant has one.
    func createUsageInformationSenderKey(_ record: UsageInformationSenderKeyRecord) async throws(StorageError)
    func usageInformation(merchantTokenID: String) async throws(StorageError) -> UsageInformationRecord?
    /// Inserts, or replaces the merchant token's record.
    func saveUsageInformation(_ record: UsageInformationRecord) async throws(StorageError)
    /// False when there was none.
    func deleteUsageInformation(merchantTokenID: String) async throws(StorageError) -> Bool
}
