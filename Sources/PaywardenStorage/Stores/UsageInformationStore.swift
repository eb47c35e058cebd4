/// Merchant-token usage information and the merchants' sender keys.
public protocol UsageInformationStore: Sendable {
    func usageInformationSenderKey(merchantID: String) async throws(StorageError) -> UsageInformationSenderKeyRecord?
    /// `.conflict` when the merchant has one.
    func createUsageInformationSenderKey(_ record: UsageInformationSenderKeyRecord) async throws(StorageError)
    func usageInformation(merchantTokenID: String) async throws(StorageError) -> UsageInformationRecord?
    /// Writes `record` (its revision as given: the one after `expected`'s, or a restored record's own) by a compare-and-set on
    /// the row its caller read: inserted when `expected` is nil and the merchant token has none, or
    /// in place of `expected` when the row is still that revision. False otherwise, nothing written:
    /// another publication, another organisation's, or an unlink came first.
    func saveUsageInformation(_ record: UsageInformationRecord, replacing expected: UsageInformationRecord?) async throws(StorageError)
        -> Bool
    /// Deletes the record whatever it holds (an unlink); false when there was none.
    func deleteUsageInformation(merchantTokenID: String) async throws(StorageError) -> Bool
    /// Deletes the record when it is still `expected`'s revision; false otherwise.
    func deleteUsageInformation(replacing expected: UsageInformationRecord) async throws(StorageError) -> Bool
}
