/// The cached handles of the token's keys, by id, for one module generation.
struct KeyHandles {
    private(set) var privateKeys: [KeyIdentifier: KeyObject] = [:]
    private(set) var secretKeys: [KeyIdentifier: SecretKeyObject] = [:]

    /// After a listing: private keys as found; secret keys are still valid (same generation).
    mutating func replacePrivateKeys(with keys: [KeyObject]) {
        privateKeys.removeAll(keepingCapacity: true)
        for key in keys { privateKeys[key.id] = key }
    }

    /// After a recycle: every handle of the old generation is void.
    mutating func replaceAll(privateKeys keys: [KeyObject]) {
        replacePrivateKeys(with: keys)
        secretKeys.removeAll(keepingCapacity: true)
    }

    mutating func remember(_ key: KeyObject) { privateKeys[key.id] = key }
    mutating func remember(_ key: SecretKeyObject) { secretKeys[key.id] = key }

    mutating func forget(_ id: KeyIdentifier) {
        privateKeys.removeValue(forKey: id)
        secretKeys.removeValue(forKey: id)
    }
}
