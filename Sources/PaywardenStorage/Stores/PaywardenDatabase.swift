/// Every store, on one database: what the service and the admin commands open.
public protocol PaywardenDatabase: ReplayLedger, RegistrationStore, TokenStore, PaypageStore, EventStore, KeyRecordStore, Migrations,
    WebMerchantStore, UsageInformationStore
{
    /// `sqlite`, `postgres` or `memory`.
    var driver: String { get }
    /// Where the data is, for operators: a path, or a URL without its password.
    var location: String { get }
    /// One cheap round trip; `.unavailable` when it fails.
    func checkConnection() async throws(StorageError)
    /// The rows in each of ``Schema/tables`` (tables not yet created are left out).
    func rowCounts() async throws(StorageError) -> [(table: String, rows: Int)]
    /// Housekeeping a running service does every second (SQLite copies its log into the file).
    func performMaintenance() async
    /// How many rows each key still protects: what rotation must re-wrap before a key can go.
    func keyUsage() async throws(StorageError) -> [KeyUsage]
}

extension PaywardenDatabase {
    public func performMaintenance() async {}
}
