import Foundation
import PaywardenPrimitives

/// Web merchants registered with Apple by the platform integrator, the domains each organisation
/// holds, and the one domain-verification file Paywarden serves for them.
///
/// A web merchant changes one request at a time: a change begins by reserving the identifier for
/// its organisation (or marking its row as being changed) before Apple is called, and its record is
/// written by a compare-and-set on that change and the organisation, so no request overwrites
/// another's registration.
public protocol WebMerchantStore: Sendable {
    func webMerchant(id: String) async throws(StorageError) -> WebMerchantRecord?
    /// Every web merchant, by id (reserved ones included: the caller decides what to show).
    func webMerchants() async throws(StorageError) -> [WebMerchantRecord]

    // MARK: Changes, one at a time per web merchant

    /// Starts `change`: inserts its reservation when no row has the id (the identifier is then the
    /// organisation's before Apple hears of it), or marks the existing row as held by the change
    /// when its organisation is the change's (any, for an admin's change) and no live change holds
    /// it. A reservation whose change has lapsed may be taken over by any organisation's.
    func beginWebMerchantChange(_ change: WebMerchantChange) async throws(StorageError) -> WebMerchantChangeStart
    /// Writes `record` and ends the change, when the row is still held by `changeID` and still
    /// belongs to `record.organization`; false otherwise (nothing written).
    func finishWebMerchantChange(_ record: WebMerchantRecord, changeID: String) async throws(StorageError) -> Bool
    /// Ends a change that wrote nothing: a reservation it made is removed, a row it held is let go.
    func abandonWebMerchantChange(id: String, changeID: String) async throws(StorageError)

    // MARK: Domains

    /// The rows of `domains` that exist, in no particular order.
    func webMerchantDomains(_ domains: [String]) async throws(StorageError) -> [WebMerchantDomainRecord]
    /// Every domain held, by domain.
    func allWebMerchantDomains() async throws(StorageError) -> [WebMerchantDomainRecord]
    /// Inserts `record` when no row has its domain; false when one does (another request got it first).
    func claimWebMerchantDomain(_ record: WebMerchantDomainRecord) async throws(StorageError) -> Bool
    /// Binds `domain` to web merchant `merchantID`, when it belongs to `organization` and no other
    /// web merchant has it; false otherwise.
    func bindWebMerchantDomain(_ domain: String, organization: OrganizationID, merchantID: String) async throws(StorageError) -> Bool
    /// Frees `domain` of web merchant `merchantID` (it stays its organisation's); false when it
    /// was not bound to it.
    func unbindWebMerchantDomain(_ domain: String, merchantID: String) async throws(StorageError) -> Bool
    /// An admin's decision: `record.domain` becomes `record.organization`'s, inserted, or moved from
    /// another organisation when no web merchant has it; false when one does.
    func assignWebMerchantDomain(_ record: WebMerchantDomainRecord) async throws(StorageError) -> Bool
    /// The organisation's domain challenge: `proposed` when it has none yet, else the one it has.
    func webMerchantDomainChallenge(organization: OrganizationID, proposed: String, at now: Date) async throws(StorageError) -> String

    // MARK: The domain-verification file

    /// Stores the file, replacing the one stored before.
    func saveDomainAssociation(_ record: DomainAssociationRecord) async throws(StorageError)
    func domainAssociation() async throws(StorageError) -> DomainAssociationRecord?
}

/// One change of a web merchant, as ``WebMerchantStore/beginWebMerchantChange(_:)`` takes it.
public struct WebMerchantChange: Sendable, Hashable {
    /// The partnerInternalMerchantIdentifier.
    public var merchantID: String
    /// Whose web merchant it must be; nil for an admin's change, which may act on any.
    public var organization: OrganizationID?
    /// Inserted when no row has the id (a registration's); nil for a change that needs a row
    /// (an unregistration's).
    public var reservation: WebMerchantRecord?
    /// Random, so the change's own writes can be told from any other's.
    public var changeID: String
    public var now: Date
    /// When the change lapses if it never finishes (its process died): long after any call to
    /// Apple it makes has timed out.
    public var until: Date

    public init(
        merchantID: String, organization: OrganizationID?, reservation: WebMerchantRecord?, changeID: String, now: Date, until: Date
    ) {
        self.merchantID = merchantID
        self.organization = organization
        self.reservation = reservation
        self.changeID = changeID
        self.now = now
        self.until = until
    }
}

/// How ``WebMerchantStore/beginWebMerchantChange(_:)`` went.
public enum WebMerchantChangeStart: Sendable, Hashable {
    /// The change holds the row (the reservation just inserted, or the existing row).
    case started(WebMerchantRecord)
    /// No row has the id, and the change brought no reservation.
    case absent
    /// The row as it stands: another organisation's, or held by another live change.
    case refused(WebMerchantRecord)
}
