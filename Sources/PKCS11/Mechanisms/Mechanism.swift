import CPKCS11

/// A mechanism with its parameters, laid out for the module only for the duration of a call.
public enum Mechanism: Sendable {
    case ecKeyPairGeneration
    case rsaKeyPairGeneration
    /// ECDH on the peer's uncompressed point, with the KDF applied inside the HSM.
    case ecdh1Derive(kdf: ECDHKeyDerivationFunction, sharedData: [UInt8], publicData: [UInt8])
    /// ECDSA over a digest the caller computed; the module returns raw r‖s.
    case ecdsa
    case sha256RSAPKCS
    /// RSA-OAEP with SHA-256 and MGF1-SHA-256, empty label.
    case rsaOAEPSHA256
    /// Raw RSA; padding is removed by the caller.
    case rsaX509
    case sha256

    public var type: MechanismType {
        switch self {
        case .ecKeyPairGeneration: .ecKeyPairGeneration
        case .rsaKeyPairGeneration: .rsaKeyPairGeneration
        case .ecdh1Derive: .ecdh1Derive
        case .ecdsa: .ecdsa
        case .sha256RSAPKCS: .sha256RSAPKCS
        case .rsaOAEPSHA256: .rsaPKCSOAEP
        case .rsaX509: .rsaX509
        case .sha256: .sha256
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
                    return try withUnsafeMutablePointer(to: &parameters) { (pointer) throws(E) -> R in
                        mechanism.pParameter = UnsafeMutableRawPointer(pointer)
                        mechanism.ulParameterLen = CK_ULONG(MemoryLayout<CK_ECDH1_DERIVE_PARAMS>.size)
                        return try body(&mechanism)
                    }
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
            return try withUnsafeMutablePointer(to: &parameters) { (pointer) throws(E) -> R in
                mechanism.pParameter = UnsafeMutableRawPointer(pointer)
                mechanism.ulParameterLen = CK_ULONG(MemoryLayout<CK_RSA_PKCS_OAEP_PARAMS>.size)
                return try body(&mechanism)
            }
        default:
            return try body(&mechanism)
        }
    }
}
