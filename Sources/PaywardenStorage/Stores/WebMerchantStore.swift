/// Web merchants registered with Apple by the platform integrator, and the one domain-verification
/// file Paywarden serves for them.
public protocol WebMerchantStore: Sendable {
    /// Inserts the record, or replaces the one with its id.
    func saveWebMerchant(_ record: WebMerchantRecord) async throws(StorageError)
    func webMerchant(id: String) async throws(StorageError) -> WebMerchantRecord?
    /// Every web merchant, by id.
    func webMerchants() async throws(StorageError) -> [WebMerchantRecord]
    /// Stores the file, replacing the one stored before.
    func saveDomainAssociation(_ record: DomainAssociationRecord) async throws(StorageError)
    func domainAssociation() async throws(StorageError) -> DomainAssociationRecord?
}
