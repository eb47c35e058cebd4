extension Session {
    /// Generates a key pair inside the HSM: token objects, the private half sensitive and never
    /// extractable, with exactly the usages specified (read back, or nothing is kept).
    public func generateKeyPair(_ specification: KeySpecification) throws(PKCS11Error) -> KeyObject {
        try generateKeyPairAdapting(specification).key
    }

    /// ``generateKeyPair(_:)``, and how the template was adapted to the module, or nil when it took
    /// the template as specified.
    ///
    /// Some modules give the public key usages of their own, derived from the private key's, and
    /// refuse a template that states others: tpm2-pkcs11 1.9 ties the public `CKA_VERIFY` to the
    /// private `CKA_DECRYPT` and `CKA_ENCRYPT` to `CKA_SIGN` (a TPM key's sign and decrypt
    /// attributes), and answers a sign-only template `CKR_GENERAL_ERROR`. The public key's usages
    /// guard nothing (anyone holding it can verify or encrypt in software), so such a refusal is
    /// retried with them left to the module; the private key's, which are the key's privileges,
    /// stay as specified and are checked once it is made.
    func generateKeyPairAdapting(_ specification: KeySpecification) throws(PKCS11Error) -> (key: KeyObject, adaptation: String?) {
        try requireUnusedKeyPairID(specification.id)
        let mechanism: Mechanism = specification.algorithm == .ecP256 ? .ecKeyPairGeneration : .rsaKeyPairGeneration
        let handles: (publicKey: ObjectHandle, privateKey: ObjectHandle)
        var adaptation: String?
        do {
            handles = try generateKeyPair(
                mechanism, publicKey: specification.publicKeyTemplate, privateKey: specification.privateKeyTemplate)
        } catch  where Self.mayBeTemplateRule(error) {
            let refusal = error
            do {
                handles = try generateKeyPair(
                    mechanism, publicKey: specification.publicKeyTemplate(statingUsages: false),
                    privateKey: specification.privateKeyTemplate)
            } catch
                where error.returnValue == refusal.returnValue
                && [.templateInconsistent, .attributeValueInvalid].contains(error.returnValue)
            {
                throw PKCS11Error(
                    code: error.code, category: .misconfiguration, function: error.function,
                    message: "the module refused the \(specification.algorithm.rawValue.uppercased()) key's template twice, as specified "
                        + "and with the public key's usages left to it: a rule of the module's, not a transient fault (its own log "
                        + "names the attribute)")
            }
            adaptation =
                "public-key usages left to the module: it refused them as specified (\(refusal.returnValue?.name ?? refusal.message)); "
                + "the private key's usages are as specified"
        }
        do throws(PKCS11Error) {
            let key = try keyObject(handles.privateKey)
            guard key.usage == specification.usage else {
                throw PKCS11Error(
                    code: .returnValue(.templateInconsistent), category: .misconfiguration, function: "C_GenerateKeyPair",
                    message: "the module made a private key with usages \(key.usage) where \(specification.usage) were specified: "
                        + "a key with more privileges than its purpose needs is not kept")
            }
            try requireKeptInside(key, handle: handles.privateKey)
            return (key, adaptation)
        } catch {
            // Leave nothing half-made in the token.
            try? destroyObject(handles.privateKey)
            try? destroyObject(handles.publicKey)
            throw error
        }
    }

    /// A new private key is kept only when the module says it cannot leave it: some modules
    /// ignore `CKA_SENSITIVE` in a template (YubiHSM 2's, by its documentation), so the template
    /// asking is not enough. Read back from every key made, generated or imported; an attribute
    /// the module does not answer counts against the key.
    func requireKeptInside(_ key: KeyObject, handle: ObjectHandle) throws(PKCS11Error) {
        let flags = try attributes(of: handle, [.sensitive, .extractable])
        let truth = { (value: [UInt8]?) in value.map { $0.contains { $0 != 0 } } }
        guard truth(flags[.sensitive]) == true, truth(flags[.extractable]) == false else {
            let shown = { (value: [UInt8]?) in truth(value).map { $0 ? "TRUE" : "FALSE" } ?? "not answered" }
            throw PKCS11Error(
                code: .returnValue(.templateInconsistent), category: .misconfiguration, function: "C_GetAttributeValue",
                message: "the module made private key \(key.id) that can leave it (CKA_SENSITIVE \(shown(flags[.sensitive])), "
                    + "CKA_EXTRACTABLE \(shown(flags[.extractable]))) where the template asked for neither: it is not kept")
        }
    }

    /// The function named by the refusal of a module that cannot import private keys.
    static let importRefusalFunction = "C_CreateObject"

    /// A refusal that a template rule of the module's may explain: the codes modules answer an
    /// attribute combination they do not accept with.
    private static func mayBeTemplateRule(_ error: PKCS11Error) -> Bool {
        guard let value = error.returnValue else { return false }
        return [.generalError, .functionFailed, .templateInconsistent, .attributeValueInvalid].contains(value)
    }

    /// Creates a token private key (and its public key object) from software material. The new
    /// object is sensitive and never extractable, like a generated one.
    public func importPrivateKey(_ key: SoftwarePrivateKey, as specification: KeySpecification) throws(PKCS11Error) -> KeyObject {
        guard key.algorithm == specification.algorithm else {
            throw .invalidInput("the key is \(key.algorithm.rawValue) but \(specification.algorithm.rawValue) was requested")
        }
        let publicKey: PublicKey
        do { publicKey = try key.publicKey() } catch {
            throw .invalidInput("the private key's public half could not be computed: it is not a valid key")
        }
        var publicTemplate = specification.publicKeyTemplate.filter { $0.type != .modulusBits && $0.type != .publicExponent }
        switch publicKey {
        case .ecP256(let point):
            // CKA_EC_POINT is a DER OCTET STRING around the point.
            publicTemplate.append(Attribute(.ecPoint, bytes: [0x04, UInt8(point.count)] + point))
        case .rsa(let modulus, let exponent):
            publicTemplate.append(Attribute(.modulus, bytes: modulus))
            publicTemplate.append(Attribute(.publicExponent, bytes: exponent))
        }
        try requireUnusedKeyPairID(specification.id)
        // The private key first: it is what a module that cannot import keys refuses, so that
        // refusal is its own and nothing is left to undo.
        let privateHandle: ObjectHandle
        do throws(PKCS11Error) {
            privateHandle = try createObject(specification.privateKeyTemplate + key.privateAttributes)
        } catch  where Self.mayBeTemplateRule(error) {
            // The key was checked in software first: its values are not what the module refuses.
            throw PKCS11Error(
                code: error.code, category: .misconfiguration, function: Self.importRefusalFunction,
                message: "the module refuses to create \(specification.algorithm.rawValue.uppercased()) private keys from their "
                    + "values: it cannot import keys (tpm2-pkcs11 cannot, for one). Make the key in the HSM instead "
                    + "(`paywarden keys create`, with a new CSR to Apple), or import into an HSM that can")
        }
        var publicHandle: ObjectHandle?
        do throws(PKCS11Error) {
            publicHandle = try createObject(publicTemplate)
            let made = try keyObject(privateHandle)
            try requireKeptInside(made, handle: privateHandle)
            return made
        } catch {
            // Leave nothing half-written.
            if let publicHandle { try? destroyObject(publicHandle) }
            try? destroyObject(privateHandle)
            throw error
        }
    }

    /// A `CKA_ID` names one key pair. Tokens differ on a second object of the same class and id:
    /// SoftHSM keeps both, NSS softokn replaces the first, so a new key never takes a used id.
    private func requireUnusedKeyPairID(_ id: KeyIdentifier) throws(PKCS11Error) {
        guard try tokenObjects(.privateKey, id: id).isEmpty, try tokenObjects(.publicKey, id: id).isEmpty else {
            throw .invalidInput("a key with id \(id) already exists in the token")
        }
    }

    /// Every private key in the token, with its public key read from the matching public object.
    /// Token objects only: session copies (``keyCopy(of:)``) share the ids of their keys.
    ///
    /// A key that cannot be described (another application's key type, no public object, a
    /// public object without `CKA_EC_POINT` or `CKA_MODULUS`) is listed as unreadable instead of
    /// failing the listing: one bad object must not hide every good one. Failures of the session
    /// or the device still fail it.
    public func privateKeys() throws(PKCS11Error) -> KeyListing {
        var listing = KeyListing()
        for handle in try tokenObjects(.privateKey) {
            do {
                listing.keys.append(try keyObject(handle))
            } catch  where error.returnValue == .objectHandleInvalid {
                continue  // destroyed between the find and the read: no longer in the token
            } catch  where Self.describesObject(error) {
                let id: KeyIdentifier?
                do {
                    id = try attributes(of: handle, [.id])[.id].flatMap { $0 }.map(KeyIdentifier.init(bytes:))
                } catch  where error.returnValue == .objectHandleInvalid {
                    continue  // its public half was found missing as the pair was being destroyed
                } catch {
                    id = nil
                }
                listing.unreadable.append(UnreadableKey(id: id, reason: error.message))
            }
        }
        return listing
    }

    /// Whether `error` is about the object read, rather than the session or the device.
    static func describesObject(_ error: PKCS11Error) -> Bool {
        switch error.code {
        case .unsupportedKey, .keyNotFound, .invalidInput: true
        default: error.category == .badInput
        }
    }

    /// The private key with `id`, or nil.
    public func privateKey(id: KeyIdentifier) throws(PKCS11Error) -> KeyObject? {
        guard let handle = try tokenObjects(.privateKey, id: id).first else { return nil }
        return try keyObject(handle)
    }

    /// Takes `usage` away from the private key with `id` (`C_SetAttributeValue` to FALSE), for a
    /// permission it needed once only, such as signing its own CSR. Session copies made before
    /// keep what they had; they end with their session.
    public func withdraw(_ usage: KeyUsage, from id: KeyIdentifier) throws(PKCS11Error) {
        guard let handle = try tokenObjects(.privateKey, id: id).first else {
            throw .keyNotFound(id)
        }
        let flags: [(KeyUsage, AttributeType)] = [(.derive, .derive), (.sign, .sign), (.decrypt, .decrypt), (.unwrap, .unwrap)]
        let withdrawn = flags.filter { usage.contains($0.0) }.map { Attribute.bool($0.1, false) }
        guard !withdrawn.isEmpty else { return }
        try setAttributes(of: handle, withdrawn)
    }

    /// Destroys the private and public key objects with `id`. Returns how many were destroyed.
    @discardableResult
    public func destroyKeyPair(id: KeyIdentifier) throws(PKCS11Error) -> Int {
        try destroyTokenObjects([.privateKey, .publicKey], id: id)
    }

    func keyObject(_ handle: ObjectHandle) throws(PKCS11Error) -> KeyObject {
        let attributes = try attributes(
            of: handle,
            [
                .id, .label, .keyType, .sensitive, .extractable, .alwaysSensitive, .neverExtractable, .derive, .sign, .decrypt, .unwrap,
            ])
        let keyType = KeyType(rawValue: attributes[.keyType].map(Self.ulong) ?? UInt.max)
        let algorithm: KeyAlgorithm
        switch keyType {
        case .ec: algorithm = .ecP256
        case .rsa: algorithm = .rsa2048
        default: throw PKCS11Error(code: .unsupportedKey, category: .misconfiguration, message: "not an EC or RSA key")
        }
        let id = KeyIdentifier(bytes: attributes[.id] ?? [])
        guard let publicHandle = try findObjects([.objectClass(.publicKey), .id(id)]).first else {
            throw .keyNotFound(id)
        }
        let publicAttributes = try self.attributes(of: publicHandle, algorithm == .ecP256 ? [.ecPoint] : [.modulus, .publicExponent])
        var usage: KeyUsage = []
        if Self.bool(attributes[.derive]) { usage.insert(.derive) }
        if Self.bool(attributes[.sign]) { usage.insert(.sign) }
        if Self.bool(attributes[.decrypt]) { usage.insert(.decrypt) }
        if Self.bool(attributes[.unwrap]) { usage.insert(.unwrap) }
        return KeyObject(
            id: id,
            label: String(decoding: attributes[.label] ?? [], as: UTF8.self),
            algorithm: algorithm,
            publicKey: try PublicKey(keyType: keyType, attributes: publicAttributes),
            usage: usage,
            isSensitive: Self.bool(attributes[.sensitive]),
            isExtractable: Self.bool(attributes[.extractable]),
            neverLeftTheHSM: Self.bool(attributes[.alwaysSensitive]) && Self.bool(attributes[.neverExtractable]),
            handle: handle
        )
    }

    static func bool(_ bytes: [UInt8]?) -> Bool { bytes?.first.map { $0 != 0 } ?? false }

    static func ulong(_ bytes: [UInt8]) -> UInt {
        var value: UInt = 0
        withUnsafeMutableBytes(of: &value) { $0.copyBytes(from: bytes.prefix(MemoryLayout<UInt>.size)) }
        return value
    }
}
