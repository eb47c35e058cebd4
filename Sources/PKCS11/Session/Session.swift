import CPKCS11

/// One PKCS#11 session. Sessions are not thread-safe: a `Session` belongs to one thread at a
/// time (a ``SessionPool`` worker, or the thread that opened it), which is why it is not
/// `Sendable`. It closes itself when the last reference goes, unless it was abandoned (its
/// handle died with a `C_Finalize`).
public final class Session {
    let module: PKCS11Module
    public let handle: SessionHandle
    private var isOpen = true
    /// Set when an operation may still be active in the module after a failure that could not
    /// end it; the session's owner replaces it rather than meet `CKR_OPERATION_ACTIVE` later.
    var needsReplacement = false
    /// Session copies of token keys, by the token key's handle (see `Session+KeyCopies.swift`).
    var keyCopies: [KeyCopyName: ObjectHandle] = [:]

    var functions: CK_FUNCTION_LIST { module.functions.pointee }
    private var raw: CK_SESSION_HANDLE { handle.rawValue }

    init(module: PKCS11Module, slot: SlotID) throws(PKCS11Error) {
        self.module = module
        var handle: CK_SESSION_HANDLE = 0
        let flags = CPKCS11_CKF_SERIAL_SESSION | CPKCS11_CKF_RW_SESSION
        try check("C_OpenSession", module.functions.pointee.C_OpenSession(slot.rawValue, flags, nil, nil, &handle))
        self.handle = SessionHandle(handle)
    }

    deinit {
        close()
    }

    /// Closes the session. Closing the last session of a process logs the token out, so the HSM
    /// keeps an anchor session open for its whole life.
    public func close() {
        guard isOpen else { return }
        isOpen = false
        _ = functions.C_CloseSession(raw)
    }

    /// Forgets the session without closing it: after `C_Finalize` its handle may name nothing,
    /// or a session another thread has since opened.
    func abandon() {
        isOpen = false
    }

    // MARK: Login

    func login(userPIN pin: [UInt8]) throws(PKCS11Error) {
        var pin = pin
        let rv = pin.withUnsafeMutableBufferPointer {
            functions.C_Login(raw, CK_USER_TYPE(CKU_USER), $0.baseAddress, CK_ULONG($0.count))
        }
        if rv == CK_RV(CKR_USER_ALREADY_LOGGED_IN) { return }
        try check("C_Login", rv)
    }

    func login(securityOfficerPIN pin: [UInt8]) throws(PKCS11Error) {
        var pin = pin
        try check(
            "C_Login",
            pin.withUnsafeMutableBufferPointer {
                functions.C_Login(raw, CK_USER_TYPE(CKU_SO), $0.baseAddress, CK_ULONG($0.count))
            })
    }

    func initializeUserPIN(_ pin: [UInt8]) throws(PKCS11Error) {
        var pin = pin
        try check(
            "C_InitPIN",
            pin.withUnsafeMutableBufferPointer {
                functions.C_InitPIN(raw, $0.baseAddress, CK_ULONG($0.count))
            })
    }

    func logout() {
        _ = functions.C_Logout(raw)
    }

    /// Whether the session sees the token logged in as the user.
    public var isLoggedIn: Bool {
        var info = CK_SESSION_INFO()
        guard functions.C_GetSessionInfo(raw, &info) == CK_RV(CKR_OK) else { return false }
        return info.state == CK_STATE(CKS_RW_USER_FUNCTIONS) || info.state == CK_STATE(CKS_RO_USER_FUNCTIONS)
    }

    // MARK: Objects

    /// Every object matching `attributes`. Costs O(objects in the token): callers cache handles.
    public func findObjects(_ attributes: [Attribute]) throws(PKCS11Error) -> [ObjectHandle] {
        try withTemplate(attributes) { (template, count) throws(PKCS11Error) in
            try check("C_FindObjectsInit", functions.C_FindObjectsInit(raw, template, count))
        }
        defer { _ = functions.C_FindObjectsFinal(raw) }
        var found: [ObjectHandle] = []
        var batch = [CK_OBJECT_HANDLE](repeating: 0, count: 64)
        while true {
            var count: CK_ULONG = 0
            try check("C_FindObjects", functions.C_FindObjects(raw, &batch, CK_ULONG(batch.count), &count))
            if count == 0 { break }
            found += batch.prefix(Int(count)).map(ObjectHandle.init)
        }
        return found
    }

    /// The token objects of `objectClass`, with `id` when given (session objects are left out).
    public func tokenObjects(_ objectClass: ObjectClass, id: KeyIdentifier? = nil) throws(PKCS11Error) -> [ObjectHandle] {
        try findObjects([.objectClass(objectClass), .bool(.token, true)] + (id.map { [.id($0)] } ?? []))
    }

    /// Destroys the token objects of `classes` with `id`. Returns how many were destroyed.
    @discardableResult
    public func destroyTokenObjects(_ classes: [ObjectClass], id: KeyIdentifier) throws(PKCS11Error) -> Int {
        var destroyed = 0
        for objectClass in classes {
            for handle in try tokenObjects(objectClass, id: id) {
                try destroyObject(handle)
                destroyed += 1
            }
        }
        return destroyed
    }

    /// Reads attributes; a missing or sensitive attribute comes back as nil.
    public func attributes(of object: ObjectHandle, _ types: [AttributeType]) throws(PKCS11Error) -> [AttributeType: [UInt8]] {
        var values: [AttributeType: [UInt8]] = [:]
        for type in types {
            var attribute = CK_ATTRIBUTE(type: type.rawValue, pValue: nil, ulValueLen: 0)
            let sizing = functions.C_GetAttributeValue(raw, object.rawValue, &attribute, 1)
            if sizing == CK_RV(CKR_ATTRIBUTE_SENSITIVE) || sizing == CK_RV(CKR_ATTRIBUTE_TYPE_INVALID) { continue }
            try check("C_GetAttributeValue", sizing)
            if attribute.ulValueLen == CPKCS11_UNAVAILABLE_INFORMATION { continue }
            var bytes = [UInt8](repeating: 0, count: Int(attribute.ulValueLen))
            let rv = bytes.withUnsafeMutableBytes { buffer in
                attribute.pValue = buffer.baseAddress
                return functions.C_GetAttributeValue(raw, object.rawValue, &attribute, 1)
            }
            try check("C_GetAttributeValue", rv)
            values[type] = Array(bytes.prefix(Int(attribute.ulValueLen)))
        }
        return values
    }

    /// Whether the token knows the attribute `type` for `object`: false when it answers
    /// `CKR_ATTRIBUTE_TYPE_INVALID` (a sensitive value is known, only unreadable).
    public func knowsAttribute(_ type: AttributeType, of object: ObjectHandle) throws(PKCS11Error) -> Bool {
        var attribute = CK_ATTRIBUTE(type: type.rawValue, pValue: nil, ulValueLen: 0)
        let rv = functions.C_GetAttributeValue(raw, object.rawValue, &attribute, 1)
        if rv == CK_RV(CKR_ATTRIBUTE_TYPE_INVALID) { return false }
        if rv == CK_RV(CKR_ATTRIBUTE_SENSITIVE) { return true }
        try check("C_GetAttributeValue", rv)
        return attribute.ulValueLen != CPKCS11_UNAVAILABLE_INFORMATION
    }

    public func setAttributes(of object: ObjectHandle, _ attributes: [Attribute]) throws(PKCS11Error) {
        try withTemplate(attributes) { (template, count) throws(PKCS11Error) in
            try check("C_SetAttributeValue", functions.C_SetAttributeValue(raw, object.rawValue, template, count))
        }
    }

    public func createObject(_ attributes: [Attribute]) throws(PKCS11Error) -> ObjectHandle {
        var object: CK_OBJECT_HANDLE = 0
        try withTemplate(attributes) { (template, count) throws(PKCS11Error) in
            try check("C_CreateObject", functions.C_CreateObject(raw, template, count, &object), generalErrorIs: .badInput)
        }
        return ObjectHandle(object)
    }

    public func destroyObject(_ object: ObjectHandle) throws(PKCS11Error) {
        try check("C_DestroyObject", functions.C_DestroyObject(raw, object.rawValue))
    }

    func copyObject(_ object: ObjectHandle, _ attributes: [Attribute]) throws(PKCS11Error) -> ObjectHandle {
        var copy: CK_OBJECT_HANDLE = 0
        try withTemplate(attributes) { (template, count) throws(PKCS11Error) in
            try check("C_CopyObject", functions.C_CopyObject(raw, object.rawValue, template, count, &copy))
        }
        return ObjectHandle(copy)
    }

    // MARK: Keys

    public func generateKeyPair(
        _ mechanism: Mechanism, publicKey: [Attribute], privateKey: [Attribute]
    ) throws(PKCS11Error) -> (publicKey: ObjectHandle, privateKey: ObjectHandle) {
        var publicHandle: CK_OBJECT_HANDLE = 0
        var privateHandle: CK_OBJECT_HANDLE = 0
        try mechanism.withUnsafeMechanism { (mechanism) throws(PKCS11Error) in
            try withTemplate(publicKey) { (publicTemplate, publicCount) throws(PKCS11Error) in
                try withTemplate(privateKey) { (privateTemplate, privateCount) throws(PKCS11Error) in
                    try check(
                        "C_GenerateKeyPair",
                        functions.C_GenerateKeyPair(
                            raw, mechanism, publicTemplate, publicCount, privateTemplate, privateCount,
                            &publicHandle, &privateHandle
                        ))
                }
            }
        }
        return (ObjectHandle(publicHandle), ObjectHandle(privateHandle))
    }

    public func generateKey(_ mechanism: Mechanism, template: [Attribute]) throws(PKCS11Error) -> ObjectHandle {
        var key: CK_OBJECT_HANDLE = 0
        try mechanism.withUnsafeMechanism { (mechanism) throws(PKCS11Error) in
            try withTemplate(template) { (template, count) throws(PKCS11Error) in
                try check("C_GenerateKey", functions.C_GenerateKey(raw, mechanism, template, count, &key))
            }
        }
        return ObjectHandle(key)
    }

    /// Derives a key from `base`. The peer data is untrusted, so `CKR_GENERAL_ERROR` (SoftHSM's
    /// answer to an off-curve point) is reported as bad input.
    public func deriveKey(_ mechanism: Mechanism, base: ObjectHandle, template: [Attribute]) throws(PKCS11Error) -> ObjectHandle {
        var derived: CK_OBJECT_HANDLE = 0
        try mechanism.withUnsafeMechanism { (mechanism) throws(PKCS11Error) in
            try withTemplate(template) { (template, count) throws(PKCS11Error) in
                let rv = functions.C_DeriveKey(raw, mechanism, base.rawValue, template, count, &derived)
                try check("C_DeriveKey", rv, generalErrorIs: .badInput)
            }
        }
        return ObjectHandle(derived)
    }

    /// Wraps (encrypts) the key `key` under `wrappingKey`.
    public func wrapKey(_ mechanism: Mechanism, wrappingKey: ObjectHandle, key: ObjectHandle) throws(PKCS11Error) -> [UInt8] {
        try mechanism.withUnsafeMechanism { (mechanism) throws(PKCS11Error) in
            try output("C_WrapKey", capacity: 128) { out, length in
                functions.C_WrapKey(raw, mechanism, wrappingKey.rawValue, key.rawValue, out, length)
            }
        }
    }

    /// Unwraps `wrapped` under `unwrappingKey` into a new object. For AES key wrap the input is
    /// untrusted and carries an integrity check, so `CKR_GENERAL_ERROR` is bad input; for RSA it
    /// is the module's own failure (see ``Mechanism/generalErrorMeansBadInput``).
    public func unwrapKey(
        _ mechanism: Mechanism, unwrappingKey: ObjectHandle, wrapped: [UInt8], template: [Attribute]
    ) throws(PKCS11Error) -> ObjectHandle {
        var unwrapped: CK_OBJECT_HANDLE = 0
        var wrapped = wrapped
        let generalErrorCategory: ErrorCategory? = mechanism.generalErrorMeansBadInput ? .badInput : nil
        try mechanism.withUnsafeMechanism { (mechanism) throws(PKCS11Error) in
            try withTemplate(template) { (template, count) throws(PKCS11Error) in
                let rv = wrapped.withUnsafeMutableBufferPointer {
                    functions.C_UnwrapKey(
                        raw, mechanism, unwrappingKey.rawValue, $0.baseAddress, CK_ULONG($0.count), template, count, &unwrapped)
                }
                try check("C_UnwrapKey", rv, generalErrorIs: generalErrorCategory)
            }
        }
        return ObjectHandle(unwrapped)
    }

    // MARK: Digest, sign, encrypt, decrypt

    public func digestInit(_ mechanism: Mechanism) throws(PKCS11Error) {
        try mechanism.withUnsafeMechanism { (mechanism) throws(PKCS11Error) in
            try check("C_DigestInit", functions.C_DigestInit(raw, mechanism))
        }
    }

    public func digestUpdate(_ data: [UInt8]) throws(PKCS11Error) {
        var data = data
        try check(
            "C_DigestUpdate",
            data.withUnsafeMutableBufferPointer {
                functions.C_DigestUpdate(raw, $0.baseAddress, CK_ULONG($0.count))
            })
    }

    /// Feeds a secret key's value into the running digest without it leaving the HSM.
    public func digestKey(_ key: ObjectHandle) throws(PKCS11Error) {
        try check("C_DigestKey", functions.C_DigestKey(raw, key.rawValue))
    }

    public func digestFinal() throws(PKCS11Error) -> [UInt8] {
        try output("C_DigestFinal", capacity: 64) { functions.C_DigestFinal(raw, $0, $1) }
    }

    public func sign(_ mechanism: Mechanism, key: ObjectHandle, data: [UInt8]) throws(PKCS11Error) -> [UInt8] {
        try mechanism.withUnsafeMechanism { (mechanism) throws(PKCS11Error) in
            try check("C_SignInit", functions.C_SignInit(raw, mechanism, key.rawValue))
        }
        var data = data
        return try output("C_Sign", capacity: 512) { out, length in
            data.withUnsafeMutableBufferPointer { functions.C_Sign(raw, $0.baseAddress, CK_ULONG($0.count), out, length) }
        }
    }

    public func encrypt(_ mechanism: Mechanism, key: ObjectHandle, data: [UInt8]) throws(PKCS11Error) -> [UInt8] {
        // Mechanism parameters (a GCM IV, its AAD) must stay valid until the single-part call ends.
        try mechanism.withUnsafeMechanism { (mechanism) throws(PKCS11Error) in
            try check("C_EncryptInit", functions.C_EncryptInit(raw, mechanism, key.rawValue))
            var data = data
            return try output("C_Encrypt", capacity: data.count + 64) { out, length in
                data.withUnsafeMutableBufferPointer { functions.C_Encrypt(raw, $0.baseAddress, CK_ULONG($0.count), out, length) }
            }
        }
    }

    /// Decrypts untrusted ciphertext; `CKR_GENERAL_ERROR` is bad input for authenticated
    /// encryption (a bad tag), the module's failure otherwise.
    public func decrypt(_ mechanism: Mechanism, key: ObjectHandle, data: [UInt8]) throws(PKCS11Error) -> [UInt8] {
        let generalErrorCategory: ErrorCategory? = mechanism.generalErrorMeansBadInput ? .badInput : nil
        return try mechanism.withUnsafeMechanism { (mechanism) throws(PKCS11Error) in
            try check("C_DecryptInit", functions.C_DecryptInit(raw, mechanism, key.rawValue))
            var data = data
            do throws(PKCS11Error) {
                return try output("C_Decrypt", capacity: max(data.count, 512), generalErrorIs: generalErrorCategory) { out, length in
                    data.withUnsafeMutableBufferPointer { functions.C_Decrypt(raw, $0.baseAddress, CK_ULONG($0.count), out, length) }
                }
            } catch {
                endDecryptionLeftActive(inputLength: data.count)
                throw error
            }
        }
    }

    /// After a failed single-part call, ends the operation where the module left it active. The
    /// standard says the error ends it; tpm2-pkcs11 1.9 keeps a failed `C_Decrypt` active, and
    /// every later operation on the session is `CKR_OPERATION_ACTIVE`. The final call ends it
    /// there, and is `CKR_OPERATION_NOT_INITIALIZED`, harmlessly, on a module that keeps the rule.
    private func endDecryptionLeftActive(inputLength: Int) {
        // Whatever the final call writes is wiped: the module decided it was no answer.
        var scratch = [CK_BYTE](repeating: 0, count: max(inputLength, 512))
        var length = CK_ULONG(scratch.count)
        _ = scratch.withUnsafeMutableBufferPointer { functions.C_DecryptFinal(raw, $0.baseAddress, &length) }
        for index in scratch.indices { scratch[index] = 0 }
    }

    /// Runs a single-part call that writes into a caller buffer, growing it once when the module
    /// asks for more (the operation stays active after `CKR_BUFFER_TOO_SMALL`).
    private func output(
        _ function: StaticString, capacity: Int, generalErrorIs category: ErrorCategory? = nil,
        _ call: (UnsafeMutablePointer<CK_BYTE>, UnsafeMutablePointer<CK_ULONG>) -> CK_RV
    ) throws(PKCS11Error) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: max(capacity, 1))
        var length = CK_ULONG(buffer.count)
        var rv = buffer.withUnsafeMutableBufferPointer { call($0.baseAddress!, &length) }
        if rv == CK_RV(CKR_BUFFER_TOO_SMALL) {
            buffer = [UInt8](repeating: 0, count: Int(length))
            rv = buffer.withUnsafeMutableBufferPointer { call($0.baseAddress!, &length) }
        }
        try check(function, rv, generalErrorIs: category)
        return Array(buffer.prefix(Int(length)))
    }
}

extension Session {
    /// `count` bytes from the token's random generator.
    func generateRandom(_ count: Int) throws(PKCS11Error) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let rv = bytes.withUnsafeMutableBufferPointer { functions.C_GenerateRandom(handle.rawValue, $0.baseAddress, CK_ULONG(count)) }
        try check("C_GenerateRandom", rv)
        return bytes
    }
}
