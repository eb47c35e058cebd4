import KeyCustody
import PKCS11
import PaywardenStorage
import Synchronization

/// The key records of a test token: one in-memory database per token label, so every
/// ``MerchantKeyStore`` a test opens on a token sees the records the others wrote, as every
/// instance sharing a production database does.
public enum TestKeyRecords {
    private static let databases = Mutex<[String: InMemoryDatabase]>([:])

    /// The records of the token `hsm` opened.
    public static func of(_ hsm: HSM) -> InMemoryDatabase {
        of(tokenLabel: hsm.token.label)
    }

    public static func of(tokenLabel: String) -> InMemoryDatabase {
        databases.withLock { databases in
            if let database = databases[tokenLabel] { return database }
            let database = InMemoryDatabase()
            databases[tokenLabel] = database
            return database
        }
    }
}
