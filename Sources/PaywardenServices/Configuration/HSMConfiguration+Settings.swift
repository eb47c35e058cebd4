import PKCS11
import PaywardenConfiguration
import PaywardenPrimitives

extension HSMConfiguration {
    /// The PKCS#11 layer's configuration from the settings; a malformed `pkcs11:` URI names the
    /// setting it came from.
    public init(settings: HSMSettings) throws(ConfigurationError) {
        let pin: PINSource =
            switch settings.pin {
            case .file(let path): .file(path)
            case .value(let value): .value(value)
            case .missing: .missing
            }
        self.init(modulePath: settings.modulePath, tokenLabel: settings.token, pin: pin)
        initReserved = settings.initReserved
        workers = settings.workers
        maxPendingOperations = settings.maxPendingOperations
        allowExtractableSharedSecret = settings.allowExtractableSharedSecret
        allowSoftwareOAEPDecoding = settings.allowSoftwareOAEPDecoding
        sessionKeyCopies = SessionKeyCopies(rawValue: settings.sessionKeyCopies) ?? .auto
        dispatch = HSMDispatch(rawValue: settings.dispatch) ?? .auto
        inlineThreshold = settings.inlineThreshold
        operationTimeout = settings.operationTimeout
        healthCheckTimeout = settings.healthCheckTimeout
        do {
            try setToken(settings.token)
        } catch {
            throw ConfigurationError("\(SettingCatalog.tokenLabel.environmentName): \(error.message)")
        }
        // The PIN file is read at every login; its owner and mode are checked now, so a file
        // others can read refuses the start rather than the first login.
        if case .file(let path) = self.pin {
            let fromSetting = if case .file(let configured) = settings.pin { configured == path } else { false }
            let source =
                fromSetting ? SettingCatalog.pinFile.environmentName : "the pin-source of \(SettingCatalog.tokenLabel.environmentName)"
            try SecretFile.check(path, for: source)
        }
    }
}
