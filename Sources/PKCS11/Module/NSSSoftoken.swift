/// NSS softokn as a PKCS#11 module: where Debian installs it, and the `C_Initialize` arguments
/// (`pReserved`) that name its database and its token's label. Its database directory is
/// created by `C_Initialize` itself; its new token has an empty security officer PIN.
public enum NSSSoftoken {
    /// Debian's `libnss3` (x86_64 multiarch path).
    public static let debianModulePath = "/usr/lib/x86_64-linux-gnu/libsoftokn3.so"

    /// The `pReserved` string for a database in `databaseDirectory` whose token is `tokenLabel`.
    public static func initReserved(databaseDirectory: String, tokenLabel: String) -> String {
        "configdir='sql:\(databaseDirectory)' certPrefix='' keyPrefix='' secmod='secmod.db' flags=optimizeSpace "
            + "dbTokenDescription='\(tokenLabel)'"
    }
}
