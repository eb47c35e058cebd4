import ArgumentParser
import Foundation
import KeyCustody
import Logging
import MerchantTokens
import OutboundTLS
import PaywardenConfiguration
import PaywardenPrimitives
import PaywardenServices
import PaywardenStorage

public struct WebMerchantsCommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "web-merchants",
        abstract: "Web merchants registered with Apple by the platform integrator (Apple's Web Merchant Registration API).",
        discussion: """
            Calls go to \(SettingCatalog.applePayGateway.environmentName) over mutual TLS with the identity key of the Payment \
            Platform Integrator ID in \(SettingCatalog.platformIntegratorID.environmentName) (the key stays in the HSM). Each \
            limit is checked before Apple is called. docs/web-merchants.md has the setup.
            """,
        subcommands: [
            WebMerchantRegister.self, WebMerchantUnregister.self, WebMerchantShow.self, WebMerchantList.self,
            WebMerchantDomainAssociation.self, WebMerchantApproveDomain.self, WebMerchantDomains.self,
        ]
    )
}

/// Runs a web-merchant command with a ``WebMerchantService`` over the HSM, the database and
/// Apple's gateway as configured; the admin command's own audit record is the one written.
struct WebMerchantAdmin {
    let name: String
    let mutates: Bool

    func run(hsm options: HSMOptions, _ body: @Sendable (_ service: WebMerchantService, _ audit: VaultAudit) async throws -> Void)
        async throws
    {
        try await AppleGatewayAdmin(name: name, mutates: mutates).run(hsm: options) { context in
            let service = WebMerchantService(
                gateway: context.gateway, store: context.database, integratorID: context.configuration.platformIntegratorID, audit: nil,
                logger: context.logger)
            try await body(service, context.audit)
        }
    }
}

extension WebMerchantView {
    var line: String {
        var text = "\(partnerInternalMerchantIdentifier)  \(state)  \"\(partnerMerchantName)\"  encryptTo \(encryptTo)"
        text += "  domains: \(domainNames.isEmpty ? "-" : domainNames.joined(separator: ","))"
        if let merchantUrl { text += "  url \(merchantUrl)" }
        text += "  updated \(updatedAt)"
        return text
    }
}

struct WebMerchantIdentifierOption: ParsableArguments {
    @Option(
        name: .customLong("id"),
        help: "The partnerInternalMerchantIdentifier: 3 to 1024 of a-z A-Z 0-9 ~ - _ + & @ $ ! | , . ; (quote it in a shell).")
    var identifier: String
}

struct WebMerchantRegister: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register", abstract: "Register a merchant's domains with Apple (registerMerchant); at most 99 per merchant.")

    @OptionGroup var merchant: WebMerchantIdentifierOption

    @Option(help: "The merchant's human-readable name (partnerMerchantName), at most 1024 characters.")
    var name: String

    @Option(
        help: ArgumentHelp(
            "The organisation the merchant belongs to: only its API keys use the registration for payment sessions. The admin "
                + "vouches for its domains: each becomes the organisation's (one another organisation holds needs approve-domain first)."))
    var organization: OrganizationID

    @Option(name: .customLong("domain"), help: "A fully qualified domain to register; repeat for more.")
    var domains: [String] = []

    @Option(
        name: .customLong("encrypt-to"), help: "The id whose payment processing certificate Apple encrypts to (default: the integrator id)."
    )
    var encryptTo: String?

    @Option(name: .customLong("merchant-url"), help: "The merchant's top-level site (https), for pages hosted on the platform's domain.")
    var merchantURL: String?

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await WebMerchantAdmin(name: "web-merchants.register", mutates: true).run(hsm: hsmOptions) { service, audit in
            audit.note("web merchant \(merchant.identifier), \(domains.count) domain(s)")
            let record = try await service.register(
                partnerInternalMerchantIdentifier: merchant.identifier, partnerMerchantName: name, domainNames: domains,
                encryptTo: encryptTo, merchantURL: merchantURL, user: AuditLog.currentUser, organization: organization, actor: .admin)
            let view = WebMerchantView(record)
            if output.json { try printJSON(view) } else { print("registered with Apple: \(view.line)") }
        }
    }
}

struct WebMerchantUnregister: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unregister",
        abstract: "Unregister domains of a merchant (unregisterMerchant); its last domain deletes the registration.")

    @OptionGroup var merchant: WebMerchantIdentifierOption

    @Option(name: .customLong("domain"), help: "A registered domain to remove; repeat for more.")
    var domains: [String] = []

    @Option(help: "A short phrase saying why (reason), at most 1024 characters.")
    var reason: String

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await WebMerchantAdmin(name: "web-merchants.unregister", mutates: true).run(hsm: hsmOptions) { service, audit in
            audit.note("web merchant \(merchant.identifier), \(domains.count) domain(s)")
            let record = try await service.unregister(
                partnerInternalMerchantIdentifier: merchant.identifier, domainNames: domains, reason: reason, user: AuditLog.currentUser,
                organization: nil)
            let view = WebMerchantView(record)
            if output.json { try printJSON(view) } else { print("unregistered at Apple: \(view.line)") }
        }
    }
}

struct WebMerchantShow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Paywarden's record of a merchant beside Apple's details (Get Merchant Details).")

    @OptionGroup var merchant: WebMerchantIdentifierOption

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await WebMerchantAdmin(name: "web-merchants.show", mutates: false).run(hsm: hsmOptions) { service, audit in
            audit.note("web merchant \(merchant.identifier)")
            let view = WebMerchantShownView(
                try await service.show(partnerInternalMerchantIdentifier: merchant.identifier, organization: nil))
            if output.json {
                try printJSON(view)
                return
            }
            print("here:  \(view.registration.line)")
            guard let apple = view.apple else {
                print("Apple: not asked (the registration is deleted)")
                return
            }
            print("Apple: domains: \((apple.domainNames ?? []).joined(separator: ",")), name \"\(apple.partnerMerchantName ?? "-")\"")
            switch view.encryptToMatches {
            case true?: print("encryptTo: matches")
            case false?: print("encryptTo: DIFFERS (Apple holds SHA-256 \(apple.encryptTo ?? "-"))")
            case nil: print("encryptTo: not in Apple's details")
            }
            if !view.domainsOnlyHere.isEmpty { print("registered here only: \(view.domainsOnlyHere.joined(separator: ","))") }
            if !view.domainsOnlyAtApple.isEmpty { print("at Apple only: \(view.domainsOnlyAtApple.joined(separator: ","))") }
        }
    }
}

struct WebMerchantList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Every web merchant recorded here, by identifier.")

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await WebMerchantAdmin(name: "web-merchants.list", mutates: false).run(hsm: hsmOptions) { service, audit in
            let views = try await service.list(organization: nil).map(WebMerchantView.init)
            audit.note("\(views.count) web merchants listed")
            if output.json {
                try printJSON(views)
            } else if views.isEmpty {
                print("no web merchants recorded")
            } else {
                for view in views { print(view.line) }
            }
        }
    }
}

struct WebMerchantDomainAssociation: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "domain-association",
        abstract: "Store the platform integrator's domain-verification file, which the service then serves byte for byte.",
        discussion: """
            Served at /.well-known/apple-developer-merchantid-domain-association for every host (text/plain, no redirect, no \
            authentication); Apple fetches it from each domain before registering it. Its SHA-256 is recorded with each registration.
            """)

    @Argument(help: "The file Apple issued for the Payment Platform Integrator ID.")
    var file: String

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        let content: [UInt8]
        do {
            content = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
        } catch {
            throw CommandFailure(.refused, "cannot read \(file): \(error.localizedDescription)")
        }
        try await WebMerchantAdmin(name: "web-merchants.domain-association", mutates: true).run(hsm: hsmOptions) { service, audit in
            let record = try await service.storeDomainAssociation(content, user: AuditLog.currentUser)
            audit.note("\(record.content.count) bytes, sha256 \(record.sha256)")
            if output.json {
                try printJSON(["bytes": "\(record.content.count)", "sha256": record.sha256])
            } else {
                print(
                    "stored \(record.content.count) bytes (sha256 \(record.sha256)); served at "
                        + "/.well-known/apple-developer-merchantid-domain-association")
            }
        }
    }
}

struct WebMerchantApproveDomain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "approve-domain",
        abstract: "Give a web domain to an organisation without its challenge (docs/web-merchants.md, \"Who may register a domain\").",
        discussion: """
            An organisation's API key registers a domain no organisation holds only after serving its challenge under the domain; \
            an admin gives one instead: a domain the platform vouches for, or one another organisation holds (claimed first by \
            mistake or by a squatter), which moves. Refused while a web merchant has the domain registered: unregister it there first.
            """)

    @Option(help: "The fully qualified domain.")
    var domain: String

    @Option(help: "The organisation that is to hold it.")
    var organization: OrganizationID

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await WebMerchantAdmin(name: "web-merchants.approve-domain", mutates: true).run(hsm: hsmOptions) { service, audit in
            audit.note("\(domain) for organisation \(organization)")
            let view = WebMerchantDomainView(
                try await service.approveDomain(domain, organization: organization, user: AuditLog.currentUser))
            if output.json { try printJSON(view) } else { print("\(view.domain) is organisation \(view.organization)'s (approved)") }
        }
    }
}

struct WebMerchantDomains: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "domains", abstract: "Every web domain an organisation holds here, how, and the web merchant it is registered for.")

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await WebMerchantAdmin(name: "web-merchants.domains", mutates: false).run(hsm: hsmOptions) { service, audit in
            let views = try await service.domains(organization: nil).map(WebMerchantDomainView.init)
            audit.note("\(views.count) domains listed")
            if output.json {
                try printJSON(views)
            } else if views.isEmpty {
                print("no domains held")
            } else {
                for view in views {
                    print("\(view.domain)  organisation \(view.organization)  \(view.proof)  web merchant \(view.webMerchant ?? "-")")
                }
            }
        }
    }
}
