import COpenSSLShim
import CPKCS11
import Crypto

extension Session {
    /// ECDH with `privateKey` and the peer's uncompressed point, followed by the one-step KDF of
    /// NIST SP 800-56A with SHA-256 and counter first: `SHA-256(00000001 ‖ Z ‖ otherInfo)`.
    /// Returns the 32-byte derived key. Every object derived on the way is destroyed.
    public func deriveConcatenationKDFKey(
        path: ECDHPath, privateKey: ObjectHandle, peerPoint: [UInt8], otherInfo: [UInt8]
    ) throws(PKCS11Error) -> [UInt8] {
        switch path {
        case .sp800KDF:
            let derived = try deriveKey(
                .ecdh1Derive(kdf: .sha256SP800, sharedData: otherInfo, publicData: peerPoint),
                base: privateKey, template: Self.derivedSecretTemplate(extractable: true)
            )
            defer { try? destroyObject(derived) }
            return try secretValue(derived)
        case .digestKey:
            let z = try deriveKey(
                .ecdh1Derive(kdf: .null, sharedData: [], publicData: peerPoint),
                base: privateKey, template: Self.derivedSecretTemplate(extractable: false)
            )
            defer { try? destroyObject(z) }
            return try concatenationKDF(secret: z, otherInfo: otherInfo)
        case .extractableSecret:
            let z = try deriveKey(
                .ecdh1Derive(kdf: .null, sharedData: [], publicData: peerPoint),
                base: privateKey, template: Self.derivedSecretTemplate(extractable: true)
            )
            defer { try? destroyObject(z) }
            var hash = SHA256()
            hash.update(data: Self.firstCounter)
            hash.update(data: try secretValue(z))
            hash.update(data: otherInfo)
            return Array(hash.finalize())
        }
    }

    /// The one-step KDF of NIST SP 800-56A with SHA-256, one block, counter first, over a secret
    /// that stays in the HSM: `SHA-256(00000001 ‖ secret ‖ otherInfo)` through `C_DigestKey`.
    ///
    /// A failure midway may leave the digest active in the module, and the next `C_DigestInit`
    /// on this session would then fail with `CKR_OPERATION_ACTIVE`: the operation is ended, and
    /// when even that fails the session is marked for replacement.
    public func concatenationKDF(secret: ObjectHandle, otherInfo: [UInt8]) throws(PKCS11Error) -> [UInt8] {
        try digestInit(.sha256)
        do {
            try digestUpdate(Self.firstCounter)
            try digestKey(secret)
            try digestUpdate(otherInfo)
            return try digestFinal()
        } catch {
            endDigestOperation()
            throw error
        }
    }

    /// Ends a digest operation that may still be active, discarding its result.
    func endDigestOperation() {
        do {
            _ = try digestFinal()
        } catch  where error.returnValue == .operationNotInitialized {
            // Nothing was active.
        } catch {
            needsReplacement = true
        }
    }

    /// Removes RSA-OAEP (SHA-256, MGF1-SHA-256, empty label) from `ciphertext` with `privateKey`.
    public func decryptOAEPSHA256(
        path: RSADecryptionPath, privateKey: ObjectHandle, ciphertext: [UInt8], modulusLength: Int
    ) throws(PKCS11Error) -> [UInt8] {
        guard ciphertext.count == modulusLength else {
            throw .invalidInput("the RSA ciphertext is \(ciphertext.count) bytes; the key's modulus is \(modulusLength)")
        }
        switch path {
        case .unwrapOAEP:
            let unwrapped = try unwrapKey(
                .rsaOAEPSHA256, unwrappingKey: privateKey, wrapped: ciphertext,
                template: Self.derivedSecretTemplate(extractable: true, length: nil)
            )
            defer { try? destroyObject(unwrapped) }
            return try secretValue(unwrapped)
        case .decryptOAEP:
            return try decrypt(.rsaOAEPSHA256, key: privateKey, data: ciphertext)
        case .rawWithSoftwareOAEP:
            let encoded = try decrypt(.rsaX509, key: privateKey, data: ciphertext)
            var message = [UInt8](repeating: 0, count: modulusLength)
            let length = encoded.withUnsafeBufferPointer { encodedBuffer in
                message.withUnsafeMutableBufferPointer {
                    pw_oaep_sha256_decode(encodedBuffer.baseAddress, encodedBuffer.count, modulusLength, $0.baseAddress, $0.count)
                }
            }
            guard length >= 0 else { throw .invalidInput("the RSA ciphertext does not carry valid OAEP (SHA-256) padding") }
            return Array(message.prefix(Int(length)))
        }
    }

    /// ECDSA over a 32-byte digest. Returns the module's raw `r ‖ s`.
    public func signECDSA(privateKey: ObjectHandle, digest: [UInt8]) throws(PKCS11Error) -> [UInt8] {
        try sign(.ecdsa, key: privateKey, data: digest)
    }

    /// RSASSA-PKCS1-v1_5 with SHA-256 over `message`, by `path`.
    public func signRSAPKCS1SHA256(
        path: RSASigningPath = .hashAndSign, privateKey: ObjectHandle, message: [UInt8]
    ) throws(PKCS11Error) -> [UInt8] {
        switch path {
        case .hashAndSign:
            return try sign(.sha256RSAPKCS, key: privateKey, data: message)
        case .softwareDigest:
            return try sign(.rsaPKCS, key: privateKey, data: Self.sha256DigestInfoPrefix + SHA256.hash(data: message))
        }
    }

    /// DER of DigestInfo's algorithm identifier for SHA-256 and its digest's OCTET STRING header
    /// (RFC 8017 section 9.2, note 1): the 32-byte digest follows.
    static let sha256DigestInfoPrefix: [UInt8] = [
        0x30, 0x31, 0x30, 0x0D, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20,
    ]

    /// RSASSA-PSS with SHA-256, MGF1-SHA-256 and a 32-byte salt over `message`.
    public func signRSAPSSSHA256(privateKey: ObjectHandle, message: [UInt8]) throws(PKCS11Error) -> [UInt8] {
        try sign(.sha256RSAPKCSPSS, key: privateKey, data: message)
    }

    /// The value of a secret the caller made extractable for this purpose.
    func secretValue(_ object: ObjectHandle) throws(PKCS11Error) -> [UInt8] {
        guard let value = try attributes(of: object, [.value])[.value] else {
            throw PKCS11Error(
                code: .returnValue(.attributeSensitive), category: .misconfiguration, function: "C_GetAttributeValue",
                message: "the HSM would not release the derived value")
        }
        return value
    }

    private static let firstCounter: [UInt8] = [0, 0, 0, 1]

    /// A session object for a derived secret. `CKA_TOKEN=FALSE` so it never reaches storage.
    static func derivedSecretTemplate(extractable: Bool, length: UInt? = 32) -> [Attribute] {
        var template: [Attribute] = [
            .objectClass(.secretKey), .keyType(.genericSecret), .bool(.token, false),
            .bool(.sensitive, !extractable), .bool(.extractable, extractable),
        ]
        if let length { template.append(.ulong(.valueLength, length)) }
        return template
    }
}
