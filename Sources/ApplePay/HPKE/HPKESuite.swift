import Crypto

/// An HPKE ciphersuite whose KEM and KDF share one hash (RFC 9180 §7): the identifiers that go
/// into `suite_id` and the sizes the key schedule needs.
public struct HPKESuite: Sendable, Hashable {
    public enum Hash: Sendable, Hashable {
        case sha256, sha384, sha512
    }

    public let kemID: UInt16
    public let kdfID: UInt16
    public let aeadID: UInt16
    /// The hash of HKDF, for the KEM's `ExtractAndExpand` and the key schedule alike.
    public let hash: Hash
    /// `Nsecret`: the KEM's shared secret length.
    public let sharedSecretLength: Int
    /// `Npk`: the serialized public key length (uncompressed point).
    public let publicKeyLength: Int
    /// `Nk`: the AES-GCM key length.
    public let keyLength: Int

    /// DHKEM(P-384, HKDF-SHA384), HKDF-SHA384, AES-256-GCM: Apple's
    /// `HPKE_AUTH_P384_SHA384_AES_GCM_256` for merchant-token usage information.
    public static let p384SHA384AES256GCM = HPKESuite(
        kemID: 0x0011, kdfID: 0x0002, aeadID: 0x0002, hash: .sha384, sharedSecretLength: 48, publicKeyLength: 97, keyLength: 32)
    /// DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-128-GCM (RFC 9180 A.3).
    public static let p256SHA256AES128GCM = HPKESuite(
        kemID: 0x0010, kdfID: 0x0001, aeadID: 0x0001, hash: .sha256, sharedSecretLength: 32, publicKeyLength: 65, keyLength: 16)
    /// DHKEM(P-521, HKDF-SHA512), HKDF-SHA512, AES-256-GCM (RFC 9180 A.6).
    public static let p521SHA512AES256GCM = HPKESuite(
        kemID: 0x0012, kdfID: 0x0003, aeadID: 0x0002, hash: .sha512, sharedSecretLength: 64, publicKeyLength: 133, keyLength: 32)

    /// `Nn`: AES-GCM's nonce length.
    public var nonceLength: Int { 12 }

    /// `"KEM" ‖ I2OSP(kem_id, 2)`.
    var kemSuiteID: [UInt8] { Array("KEM".utf8) + Self.i2osp2(kemID) }

    /// `"HPKE" ‖ I2OSP(kem_id, 2) ‖ I2OSP(kdf_id, 2) ‖ I2OSP(aead_id, 2)`.
    var hpkeSuiteID: [UInt8] { Array("HPKE".utf8) + Self.i2osp2(kemID) + Self.i2osp2(kdfID) + Self.i2osp2(aeadID) }

    static func i2osp2(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }

    /// `H(data)`.
    public func digest(_ data: [UInt8]) -> [UInt8] {
        switch hash {
        case .sha256: Array(SHA256.hash(data: data))
        case .sha384: Array(SHA384.hash(data: data))
        case .sha512: Array(SHA512.hash(data: data))
        }
    }

    /// The hash's block length (HMAC pads its key to it).
    var blockLength: Int {
        switch hash {
        case .sha256: SHA256.blockByteCount
        case .sha384: SHA384.blockByteCount
        case .sha512: SHA512.blockByteCount
        }
    }

    /// `Nh`: the hash's output length.
    var hashLength: Int {
        switch hash {
        case .sha256: SHA256.byteCount
        case .sha384: SHA384.byteCount
        case .sha512: SHA512.byteCount
        }
    }
}

extension HPKESuite {
    /// `Nsk`: the private key length.
    public var privateKeyLength: Int { (publicKeyLength - 1) / 2 }

    /// `DeriveKeyPair(ikm)` for the NIST curves (RFC 9180 §7.1.3): candidate scalars from
    /// `LabeledExpand` until one is in range, which `isValidScalar` (the curve's own key type) says.
    /// Returns the private key's bytes.
    public func derivePrivateKey(from ikm: [UInt8], isValidScalar: ([UInt8]) -> Bool) throws -> [UInt8] {
        let dkpPRK = labeledExtract(salt: [], suiteID: kemSuiteID, label: "dkp_prk", ikm: ikm)
        let bitmask: UInt8 = kemID == 0x0012 ? 0x01 : 0xFF
        for counter in 0...255 {
            var candidate = labeledExpand(
                prk: dkpPRK, suiteID: kemSuiteID, label: "candidate", info: [UInt8(counter)], length: privateKeyLength)
            candidate[0] &= bitmask
            if candidate.contains(where: { $0 != 0 }) && isValidScalar(candidate) { return candidate }
        }
        throw HPKEError.keyNotOfSuite
    }
}
