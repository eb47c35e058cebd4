import CPKCS11

/// A mechanism with its parameters, laid out for the module only for the duration of a call.
public enum Mechanism: Sendable {
    case ecKeyPairGeneration
    case rsaKeyPairGeneration
    case aesKeyGeneration
    case genericSecretKeyGeneration
    /// ECDH on the peer's uncompressed point, with the KDF applied inside the HSM.
    case ecdh1Derive(kdf: ECDHKeyDerivationFunction, sharedData: [UInt8], publicData: [UInt8])
    /// ECDSA over a digest the caller computed; the module returns raw r‖s.
    case ecdsa
    case sha256RSAPKCS
    /// RSASSA-PKCS1-v1_5 over a DigestInfo the caller built (the hash computed in software).
    case rsaPKCS
    /// RSASSA-PSS over the message with SHA-256, MGF1-SHA-256 and a 32-byte salt: the
    /// `rsa_pss_rsae_sha256` signatures of TLS 1.3.
    case sha256RSAPKCSPSS
    /// RSA-OAEP with SHA-256 and MGF1-SHA-256, empty label.
    case rsaOAEPSHA256
    /// Raw RSA; padding is removed by the caller.
    case rsaX509
    case sha256
    case sha256HMAC
    /// AES-GCM with the caller's IV and additional authenticated data; the tag follows the
    /// ciphertext.
    case aesGCM(iv: [UInt8], additionalData: [UInt8], tagBits: Int)
    /// AES key wrap with padding (RFC 5649).
    case aesKeyWrapPad
    /// SHA-384 digest: HPKE's P-384 suite hashes an ECDH secret with it inside the HSM.
    case sha384

    /// Whether `CKR_GENERAL_ERROR` from this mechanism means the input was refused. SoftHSM
    /// answers a bad GCM tag or a failed AES key-wrap integrity check that way; for RSA the input
    /// has no integrity check the module could fail, so the error is the module's own, and a
    /// request that met it may be retried.
    var generalErrorMeansBadInput: Bool {
        switch self {
        case .aesGCM, .aesKeyWrapPad: true
        default: false
        }
    }

    public var type: MechanismType {
        switch self {
        case .ecKeyPairGeneration: .ecKeyPairGeneration
        case .rsaKeyPairGeneration: .rsaKeyPairGeneration
        case .aesKeyGeneration: .aesKeyGeneration
        case .genericSecretKeyGeneration: .genericSecretKeyGeneration
        case .ecdh1Derive: .ecdh1Derive
        case .ecdsa: .ecdsa
        case .sha256RSAPKCS: .sha256RSAPKCS
        case .rsaPKCS: .rsaPKCS
        case .sha256RSAPKCSPSS: .sha256RSAPKCSPSS
        case .rsaOAEPSHA256: .rsaPKCSOAEP
        case .rsaX509: .rsaX509
        case .sha256: .sha256
        case .sha256HMAC: .sha256HMAC
        case .aesGCM: .aesGCM
        case .aesKeyWrapPad: .aesKeyWrapPad
        case .sha384: .sha384
        }
    }

    func withUnsafeMechanism<R, E: Error>(_ body: (UnsafeMutablePointer<CK_MECHANISM>) throws(E) -> R) throws(E) -> R {
        var mechanism = CK_MECHANISM(mechanism: type.rawValue, pParameter: nil, ulParameterLen: 0)
        switch self {
        case .ecdh1Derive(let kdf, let sharedData, let publicData):
            var shared = sharedData
            var point = publicData
            return try shared.withUnsafeMutableBufferPointer { (sharedBuffer) throws(E) -> R in
                try point.withUnsafeMutableBufferPointer { (pointBuffer) throws(E) -> R in
                    var parameters = CK_ECDH1_DERIVE_PARAMS(
                        kdf: kdf.rawValue,
                        ulSharedDataLen: CK_ULONG(sharedBuffer.count),
                        pSharedData: sharedBuffer.isEmpty ? nil : sharedBuffer.baseAddress,
                        ulPublicDataLen: CK_ULONG(pointBuffer.count),
                        pPublicData: pointBuffer.baseAddress
                    )
                    return try Self.with(&parameters, in: &mechanism, body)
                }
            }
        case .rsaOAEPSHA256:
            var parameters = CK_RSA_PKCS_OAEP_PARAMS(
                hashAlg: CK_MECHANISM_TYPE(CKM_SHA256),
                mgf: CK_RSA_PKCS_MGF_TYPE(CKG_MGF1_SHA256),
                source: CK_RSA_PKCS_OAEP_SOURCE_TYPE(CKZ_DATA_SPECIFIED),
                pSourceData: nil,
                ulSourceDataLen: 0
            )
            return try Self.with(&parameters, in: &mechanism, body)
        case .sha256RSAPKCSPSS:
            var parameters = CK_RSA_PKCS_PSS_PARAMS(
                hashAlg: CK_MECHANISM_TYPE(CKM_SHA256), mgf: CK_RSA_PKCS_MGF_TYPE(CKG_MGF1_SHA256), sLen: 32
            )
            return try Self.with(&parameters, in: &mechanism, body)
        case .aesGCM(let iv, let additionalData, let tagBits):
            var iv = iv
            // A non-NULL AAD pointer even when empty: SoftHSM dereferences it.
            var aad = additionalData.isEmpty ? [0] : additionalData
            let aadLength = additionalData.count
            return try iv.withUnsafeMutableBufferPointer { (ivBuffer) throws(E) -> R in
                try aad.withUnsafeMutableBufferPointer { (aadBuffer) throws(E) -> R in
                    var parameters = CK_GCM_PARAMS(
                        pIv: ivBuffer.baseAddress, ulIvLen: CK_ULONG(ivBuffer.count), ulIvBits: CK_ULONG(ivBuffer.count * 8),
                        pAAD: aadBuffer.baseAddress, ulAADLen: CK_ULONG(aadLength), ulTagBits: CK_ULONG(tagBits)
                    )
                    return try Self.with(&parameters, in: &mechanism, body)
                }
            }
        default:
            return try body(&mechanism)
        }
    }

    /// Points `mechanism` at `parameters` for the duration of `body`.
    private static func with<Parameters, R, E: Error>(
        _ parameters: inout Parameters, in mechanism: inout CK_MECHANISM,
        _ body: (UnsafeMutablePointer<CK_MECHANISM>) throws(E) -> R
    ) throws(E) -> R {
        try withUnsafeMutablePointer(to: &parameters) { (pointer) throws(E) -> R in
            mechanism.pParameter = UnsafeMutableRawPointer(pointer)
            mechanism.ulParameterLen = CK_ULONG(MemoryLayout<Parameters>.size)
            return try body(&mechanism)
        }
    }
}
