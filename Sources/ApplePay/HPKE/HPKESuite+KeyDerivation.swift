import Crypto

/// RFC 9180 §4: HKDF with the suite's hash, and its labelled forms.
extension HPKESuite {
    static let versionLabel = Array("HPKE-v1".utf8)

    /// `Extract(salt, ikm)`: HMAC with `salt` as the key (an empty salt is HMAC's zero-padded key).
    func extract(salt: [UInt8], ikm: [UInt8]) -> [UInt8] {
        let key = SymmetricKey(data: salt)
        switch hash {
        case .sha256: return Array(HMAC<SHA256>.authenticationCode(for: ikm, using: key))
        case .sha384: return Array(HMAC<SHA384>.authenticationCode(for: ikm, using: key))
        case .sha512: return Array(HMAC<SHA512>.authenticationCode(for: ikm, using: key))
        }
    }

    /// `Expand(prk, info, L)`.
    func expand(prk: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        let key = SymmetricKey(data: prk)
        let output: SymmetricKey
        switch hash {
        case .sha256: output = HKDF<SHA256>.expand(pseudoRandomKey: key, info: info, outputByteCount: length)
        case .sha384: output = HKDF<SHA384>.expand(pseudoRandomKey: key, info: info, outputByteCount: length)
        case .sha512: output = HKDF<SHA512>.expand(pseudoRandomKey: key, info: info, outputByteCount: length)
        }
        return output.withUnsafeBytes { Array($0) }
    }

    func labeledExtract(salt: [UInt8], suiteID: [UInt8], label: String, ikm: [UInt8]) -> [UInt8] {
        extract(salt: salt, ikm: Self.versionLabel + suiteID + Array(label.utf8) + ikm)
    }

    func labeledExpand(prk: [UInt8], suiteID: [UInt8], label: String, info: [UInt8], length: Int) -> [UInt8] {
        let labeledInfo = Self.i2osp2(UInt16(length)) + Self.versionLabel + suiteID + Array(label.utf8) + info
        return expand(prk: prk, info: labeledInfo, length: length)
    }

    /// The first `length` bytes of the KEM's `eae_prk` input, up to the sender's shared secret:
    /// HMAC's inner block for an empty key (`0x36` repeated), then the labelled IKM's head.
    /// `H(prefix ‖ DH(skS, pkR))` is HMAC's inner hash (see ``HPKESenderKey``).
    func eaePRKInnerPrefix(ephemeralSharedSecret: [UInt8]) -> [UInt8] {
        [UInt8](repeating: 0x36, count: blockLength) + Self.versionLabel + kemSuiteID + Array("eae_prk".utf8) + ephemeralSharedSecret
    }

    /// HMAC's outer hash over the inner one, for an empty key (`0x5c` repeated).
    func eaePRK(innerHash: [UInt8]) -> [UInt8] {
        digest([UInt8](repeating: 0x5C, count: blockLength) + innerHash)
    }
}
