/// Who registers a web merchant, which decides how its domains become its organisation's.
public enum WebMerchantActor: Sendable, Hashable {
    /// An organisation's API key: a domain no organisation holds must first be proved, by the
    /// organisation's challenge served under the domain; `encryptTo` names the integrator only.
    case organizationKey
    /// An admin on the command line, registering for an organisation: the admin vouches for the
    /// domains (a domain another organisation holds still needs `approve-domain` to move), and may
    /// name another party's `encryptTo`.
    case admin
}
