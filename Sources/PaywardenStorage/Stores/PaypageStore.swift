/// Paypage configurations, created and changed by the admin CLI.
public protocol PaypageStore: Sendable {
    /// `.conflict` when the id exists.
    func createPaypage(_ record: PaypageRecord) async throws(StorageError)
    func paypage(id: String) async throws(StorageError) -> PaypageRecord?
    /// Every paypage, by id.
    func paypages() async throws(StorageError) -> [PaypageRecord]
    /// False when the id is unknown.
    func setPaypage(id: String, enabled: Bool) async throws(StorageError) -> Bool
}
