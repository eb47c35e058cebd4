import Crypto
import Synchronization

extension HSM {
    // MARK: Key administration

    /// Generates a key pair inside the HSM (see ``KeySpecification`` for the attributes).
    public func generateKeyPair(_ specification: KeySpecification) async throws(PKCS11Error) -> KeyObject {
        try await makeKey { session throws(PKCS11Error) in try session.generateKeyPair(specification) }
    }

    /// Imports a software key as a sensitive, non-extractable token object.
    ///
    /// A module that cannot import keys answers with the codes a failing device answers too
    /// (tpm2-pkcs11: `CKR_ATTRIBUTE_VALUE_INVALID`; others `CKR_GENERAL_ERROR`), so its refusal is
    /// called permanent only when it is given twice (a general error once may be a fault) and the
    /// HSM then passes its health check; otherwise the health check's error (an outage, worth a
    /// retry) is what the caller gets.
    public func importPrivateKey(_ key: SoftwarePrivateKey, as specification: KeySpecification) async throws(PKCS11Error) -> KeyObject {
        let make = { [self] () async throws(PKCS11Error) -> KeyObject in
            try await makeKey { session throws(PKCS11Error) in try session.importPrivateKey(key, as: specification) }
        }
        do {
            return try await make()
        } catch  where Self.isImportRefusal(error) {
            if [.generalError, .functionFailed].contains(error.returnValue) {
                do { return try await make() } catch  where Self.isImportRefusal(error) {}
            }
            try await checkHealth()
            throw error
        }
    }

    private static func isImportRefusal(_ error: PKCS11Error) -> Bool {
        error.category == .misconfiguration && error.function == Session.importRefusalFunction
    }

    /// Destroys the key pair with `id`. Returns how many objects were destroyed. Session copies
    /// of the key end with a module recycle.
    @discardableResult
    public func destroyKeyPair(_ id: KeyIdentifier) async throws(PKCS11Error) -> Int {
        forget(id)
        let destroyed = try await withSession { session throws(PKCS11Error) in try session.destroyKeyPair(id: id) }
        if destroyed > 0 && state.withLock({ $0.sessionKeyCopiesMayExist }) {
            // The key is gone whatever happens here; a failed recycle is the maintenance's to retry.
            do { try await recycle() } catch { logger.error("recycle after destroying a key failed", metadata: ["error": "\(error)"]) }
        }
        return destroyed
    }

    // MARK: Private-key operations

    /// What this HSM lacks for `operation`, or nil when the probe found a path for it.
    public func capabilityGap(_ operation: CapabilityGap.Operation) -> CapabilityGap? {
        CapabilityGap.find(operation, in: capabilities, configuration: configuration)
    }

    /// Every operation payment tokens need that this HSM cannot run.
    public var tokenDecryptionGaps: [CapabilityGap] { CapabilityGap.Operation.tokenDecryption.compactMap(capabilityGap) }

    /// Every operation sealing data under HSM keys needs that this HSM cannot run.
    public var dataProtectionGaps: [CapabilityGap] { CapabilityGap.Operation.dataProtection.compactMap(capabilityGap) }

    /// ECDH between the key `id` and `peerPoint` (an uncompressed P-256 point), then the one-step
    /// KDF of NIST SP 800-56A with SHA-256, counter first, over `otherInfo`, on the strongest
    /// path the token supports. The point is validated here, so a bad point is bad input and
    /// never an HSM failure.
    public func deriveConcatenationKDFKey(_ id: KeyIdentifier, peerPoint: [UInt8], otherInfo: [UInt8]) async throws(PKCS11Error) -> [UInt8]
    {
        guard let path = capabilities.ecdhPath else { throw .capabilityMissing(capabilityGap(.ecdhP256)) }
        guard peerPoint.count == 65, peerPoint.first == 0x04,
            (try? P256.KeyAgreement.PublicKey(x963Representation: peerPoint)) != nil
        else {
            throw .invalidInput("the peer public key is not an uncompressed point on P-256")
        }
        return try await withPrivateKey(id, operation: "ecdh-kdf", path: path.rawValue) { [self] (session, key) throws(PKCS11Error) in
            guard key.algorithm == .ecP256 else { throw .invalidInput("key \(id) is \(key.algorithm.rawValue), not EC") }
            guard key.usage.contains(.derive) else { throw .call("C_DeriveKey", .keyFunctionNotPermitted) }
            return try withDecryptionHandle(session, key) { (handle) throws(PKCS11Error) in
                try attributingModuleFailure("ecdh-kdf") { () throws(PKCS11Error) in
                    try session.deriveConcatenationKDFKey(path: path, privateKey: handle, peerPoint: peerPoint, otherInfo: otherInfo)
                } knownAnswer: {
                    session.ecdhKnownAnswer(path: path, privateKey: handle, publicKey: key.publicKey)
                }
            }
        }
    }

    /// Removes RSA-OAEP (SHA-256, MGF1-SHA-256) from `ciphertext` with the key `id`, on the
    /// strongest path the token supports.
    public func decryptOAEPSHA256(_ id: KeyIdentifier, ciphertext: [UInt8]) async throws(PKCS11Error) -> [UInt8] {
        guard let path = capabilities.rsaDecryptionPath else { throw .capabilityMissing(capabilityGap(.rsaOAEPSHA256)) }
        return try await withPrivateKey(id, operation: "rsa-oaep-decrypt", path: path.rawValue) {
            [self] (session, key) throws(PKCS11Error) in
            guard case .rsa(let modulus, _) = key.publicKey else { throw .invalidInput("key \(id) is not RSA") }
            return try withDecryptionHandle(session, key) { (handle) throws(PKCS11Error) in
                try attributingModuleFailure("rsa-oaep-decrypt") { () throws(PKCS11Error) in
                    try session.decryptOAEPSHA256(path: path, privateKey: handle, ciphertext: ciphertext, modulusLength: modulus.count)
                } knownAnswer: {
                    session.rsaOAEPKnownAnswer(path: path, privateKey: handle, publicKey: key.publicKey)
                }
            }
        }
    }

    /// `operation` on outside bytes, with a failure the module may mean either way decided by a
    /// health check of the operation itself. Modules answer `CKR_FUNCTION_FAILED` or
    /// `CKR_GENERAL_ERROR` both for input they cannot use (SoftHSM for a bad GCM tag or an
    /// off-curve point) and when they fail; the code alone cannot tell. So the same operation runs
    /// again at once with the same key and session on input made here: when that answer matches
    /// software's, the module works and the input was at fault (bad input, counted); otherwise the
    /// module is failing (retry, and the service's health checks take over).
    private func attributingModuleFailure<R>(
        _ name: String, _ operation: () throws(PKCS11Error) -> R, knownAnswer: () -> Bool
    ) throws(PKCS11Error) -> R {
        do {
            return try operation()
        } catch  where error.returnValue == .functionFailed || error.returnValue == .generalError {
            guard knownAnswer() else {
                throw PKCS11Error(code: error.code, category: .retry, function: error.function, message: error.message)
            }
            configuration.inputFailureObserver?(name)
            throw PKCS11Error(
                code: error.code, category: .badInput, function: error.function,
                message: "the module failed this call, then ran the same operation with the same key correctly on input of its "
                    + "own: the input is at fault")
        }
    }

    /// Runs a decryption operation with the handle to use for `key` in `session`: the session's
    /// copy of it when copies are on, else the token object itself.
    private func withDecryptionHandle<R>(
        _ session: Session, _ key: KeyObject, _ operation: (ObjectHandle) throws(PKCS11Error) -> R
    ) throws(PKCS11Error) -> R {
        guard usesSessionKeyCopies else { return try operation(key.handle) }
        state.withLock { $0.sessionKeyCopyUsed() }
        do {
            return try operation(try session.keyCopy(of: key))
        } catch {
            if error.returnValue == .keyHandleInvalid || error.returnValue == .objectHandleInvalid {
                session.dropKeyCopy(of: key)
            }
            throw error
        }
    }

    /// ECDSA P-256 over a SHA-256 digest, DER-encoded as X.509 and CMS expect.
    public func signECDSA(_ id: KeyIdentifier, digest: [UInt8]) async throws(PKCS11Error) -> [UInt8] {
        guard digest.count == 32 else { throw .invalidInput("an ECDSA P-256 digest is 32 bytes") }
        let raw = try await withPrivateKey(id, operation: "ecdsa-sign") { (session, key) throws(PKCS11Error) in
            guard key.algorithm == .ecP256 else { throw .invalidInput("key \(id) is not EC") }
            return try session.signECDSA(privateKey: key.handle, digest: digest)
        }
        do {
            return Array(try P256.Signing.ECDSASignature(rawRepresentation: raw).derRepresentation)
        } catch {
            throw PKCS11Error(
                code: .returnValue(.functionFailed), category: .retry, function: "C_Sign",
                message: "the HSM returned a malformed ECDSA signature of \(raw.count) bytes")
        }
    }

    /// RSASSA-PKCS1-v1_5 with SHA-256 over `message`, by the path the probe found (the HSM's
    /// own hash-and-sign, else a software hash signed with `CKM_RSA_PKCS`). Without one (the admin
    /// commands do not probe), each path in turn while the module answers `CKR_MECHANISM_INVALID`.
    public func signRSAPKCS1SHA256(_ id: KeyIdentifier, message: [UInt8]) async throws(PKCS11Error) -> [UInt8] {
        // No probed path (unprobed, or the probe's RSA key could not be made): each in turn.
        let paths = capabilities.rsaSigningPath.map { [$0][...] } ?? RSASigningPath.allCases[...]
        return try await withPrivateKey(id, operation: "rsa-pkcs1-sign") { (session, key) throws(PKCS11Error) in
            guard key.algorithm == .rsa2048 else { throw .invalidInput("key \(id) is not RSA") }
            var remaining = paths
            while true {
                let path = remaining.removeFirst()
                do throws(PKCS11Error) {
                    return try session.signRSAPKCS1SHA256(path: path, privateKey: key.handle, message: message)
                } catch  where error.returnValue == .mechanismInvalid && !remaining.isEmpty {
                    continue
                }
            }
        }
    }

    /// RSASSA-PSS with SHA-256, MGF1-SHA-256 and a 32-byte salt over `message` (TLS 1.3's
    /// `rsa_pss_rsae_sha256`), when the token offers it.
    public func signRSAPSSSHA256(_ id: KeyIdentifier, message: [UInt8]) async throws(PKCS11Error) -> [UInt8] {
        guard capabilities.rsaPSS else { throw .mechanismUnsupported("the token does not offer RSA-PSS (see the capability probe)") }
        return try await withPrivateKey(id, operation: "rsa-pss-sign") { (session, key) throws(PKCS11Error) in
            guard key.algorithm == .rsa2048 else { throw .invalidInput("key \(id) is not RSA") }
            return try session.signRSAPSSSHA256(privateKey: key.handle, message: message)
        }
    }
}
