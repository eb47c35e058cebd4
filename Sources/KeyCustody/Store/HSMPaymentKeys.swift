import ApplePay
import Crypto
import Foundation
import PKCS11
import PaywardenPrimitives
import Synchronization

/// The merchant keys in the HSM as the decryption engine needs them: a map from
/// `publicKeyHash` to key (active and retired processing keys), and the private-key operations
/// run in the HSM.
public final class HSMPaymentKeys: MerchantKeyDirectory, MerchantKeyOperations {
    public let hsm: HSM
    private let keys = Mutex<[[UInt8]: MerchantKeyReference]>([:])
    /// The publicKeyHashes of keys in the HSM without a record: said when a token is encrypted to one.
    private let unadopted = Mutex<Set<[UInt8]>>([])

    public init(hsm: HSM) {
        self.hsm = hsm
    }

    /// Rebuilds the map from the HSM. Returns the number of keys that decrypt.
    @discardableResult
    public func reload(from store: MerchantKeyStore) async throws(CustodyError) -> Int {
        reload(from: try await store.inventory())
    }

    /// Rebuilds the map from keys already read. A key that could not be read this time keeps the
    /// entry it had (its record or certificate may be damaged; the key itself still works), so one
    /// bad object never takes working keys out of service. Returns the number of keys that decrypt.
    @discardableResult
    public func reload(from inventory: KeyInventory) -> Int {
        let unreadable = Set(inventory.unreadable.map(\.id.hex))
        let kept = keys.withLock { map in map.filter { unreadable.contains($0.value.keyID) } }
        let unadopted = Set(inventory.unadopted.compactMap { Data(base64Encoded: $0.publicKeyHash).map(Array.init) })
        self.unadopted.withLock { $0 = unadopted }
        return reload(from: inventory.keys, keeping: kept)
    }

    /// Rebuilds the map from keys already read. Returns the number of keys that decrypt.
    @discardableResult
    public func reload(from keys: [MerchantKey]) -> Int {
        reload(from: keys, keeping: [:])
    }

    private func reload(from keys: [MerchantKey], keeping kept: [[UInt8]: MerchantKeyReference]) -> Int {
        var map = kept
        for key in keys where key.purpose == .processing && key.state.decrypts {
            guard let hash = Data(base64Encoded: key.publicKeyHash), let partyV = key.merchantIdentifierHash.flatMap(Hex.decode),
                partyV.count == 32
            else {
                continue
            }
            map[Array(hash)] = MerchantKeyReference(
                keyID: key.id.hex, version: key.key.algorithm == .ecP256 ? .ecV1 : .rsaV1, merchantIdentifierHash: partyV
            )
        }
        let count = map.count
        self.keys.withLock { $0 = map }
        return count
    }

    /// The number of keys in the map.
    public var count: Int { keys.withLock { $0.count } }

    public func key(forPublicKeyHash hash: [UInt8]) -> MerchantKeyReference? {
        keys.withLock { $0[hash] }
    }

    public func hasUnrecordedKey(forPublicKeyHash hash: [UInt8]) -> Bool {
        unadopted.withLock { $0.contains(hash) }
    }

    public func deriveKey(ephemeralPublicKey: EphemeralPublicKey, otherInfo: [UInt8], key: MerchantKeyReference) async throws
        -> SymmetricKey
    {
        let id = try Self.identifier(key)
        do {
            return SymmetricKey(
                data: try await hsm.deriveConcatenationKDFKey(
                    id, peerPoint: ephemeralPublicKey.x963Representation, otherInfo: otherInfo))
        } catch {
            throw Self.paymentError(error, operation: "ECDH")
        }
    }

    public func unwrapKey(_ wrappedKey: [UInt8], key: MerchantKeyReference) async throws -> SymmetricKey {
        let id = try Self.identifier(key)
        do {
            return SymmetricKey(data: try await hsm.decryptOAEPSHA256(id, ciphertext: wrappedKey))
        } catch {
            throw Self.paymentError(error, operation: "RSA-OAEP unwrap")
        }
    }

    public func missingCapability(for version: PaymentTokenVersion) -> String? {
        Self.undecryptableVersions(hsm).first { $0.version == version }?.gap.description
    }

    /// The token versions `hsm` can never decrypt, each with what it lacks.
    public static func undecryptableVersions(_ hsm: HSM) -> [(version: PaymentTokenVersion, gap: CapabilityGap)] {
        hsm.tokenDecryptionGaps.compactMap { gap in version(of: gap.operation).map { ($0, gap) } }
    }

    /// The token version whose decryption needs `operation`; nil for operations no token needs.
    public static func version(of operation: CapabilityGap.Operation) -> PaymentTokenVersion? {
        switch operation {
        case .ecdhP256: .ecV1
        case .rsaOAEPSHA256: .rsaV1
        case .dataKeyProtection, .hmacSHA256: nil
        }
    }

    /// Whether `hsm` can decrypt each token version, as its capability probe found.
    public static func decryptableVersions(_ hsm: HSM) -> [PaymentTokenVersion: Bool] {
        let missing = Set(undecryptableVersions(hsm).map(\.version))
        return [.ecV1: !missing.contains(.ecV1), .rsaV1: !missing.contains(.rsaV1)]
    }

    private static func identifier(_ key: MerchantKeyReference) throws(PaymentTokenError) -> KeyIdentifier {
        guard let id = KeyIdentifier(hex: key.keyID) else { throw PaymentTokenError(.decryptionFailed, "bad key reference") }
        return id
    }

    /// HSM errors as the decryption engine reports them: refused input is the token's fault,
    /// everything else is the HSM's.
    static func paymentError(_ error: PKCS11Error, operation: String) -> PaymentTokenError {
        switch (error.code, error.category) {
        case (.overloaded, _):
            return PaymentTokenError(.overloaded, "the HSM has too much work queued; retry shortly")
        case (_, .badInput):
            return PaymentTokenError(
                .decryptionFailed,
                "the HSM refused the token's key material in \(operation) (\(error.returnValue?.name ?? "invalid input"))")
        case (.capabilityMissing, _):
            return PaymentTokenError(.hsmCapabilityMissing, "this service cannot run \(operation): \(error.message)")
        case (.keyNotFound, _):
            // The key map lists it, so the HSM should have it: a session that lost its login sees
            // no private keys. Retryable; a key really destroyed leaves the map at the next reload.
            return PaymentTokenError(
                .hsmUnavailable,
                "the HSM did not find the key the key map lists for this publicKeyHash (a lost login, or a key destroyed "
                    + "moments ago); retry shortly")
        default:
            return PaymentTokenError(
                .hsmUnavailable,
                "the HSM could not run \(operation): \(error.returnValue?.name ?? String(describing: error.code)) "
                    + "[\(error.category.rawValue)]"
            )
        }
    }

}
