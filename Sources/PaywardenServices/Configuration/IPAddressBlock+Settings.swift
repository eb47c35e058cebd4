import PaywardenConfiguration

extension IPAddressBlock {
    /// The CIDR blocks a list setting names, each checked; a bad one names its setting.
    public static func blocks(_ entries: [String], _ setting: Setting) throws(ConfigurationError) -> [IPAddressBlock] {
        var blocks: [IPAddressBlock] = []
        for entry in entries {
            guard let block = IPAddressBlock(entry) else {
                throw ConfigurationError(
                    "\(setting.environmentName) (\"\(setting.key)\" in the configuration file): \"\(entry.prefix(64))\" is not a CIDR "
                        + "block; expected entries such as 17.58.0.0/18 or 2001:db8::/32")
            }
            blocks.append(block)
        }
        return blocks
    }
}
