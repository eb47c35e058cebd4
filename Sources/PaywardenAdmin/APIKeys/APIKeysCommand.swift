import ArgumentParser
import Foundation
import PaywardenConfiguration
import PaywardenPrimitives
import PaywardenServices

public struct APIKeysCommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "apikeys",
        abstract: "API keys for the HTTP service.",
        subcommands: [APIKeysCreate.self]
    )
}

struct APIKeysCreate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract:
            "Create an API key: prints the key once, and the entry (its SHA-256, never the key) for "
            + "\(SettingCatalog.apiKeys.environmentName)."
    )

    @Option(help: "A name for the key's holder (letters, digits, - and _).")
    var name: String = "payments"

    @Option(help: "What the key may do: \(APIScope.allCases.map(\.rawValue).joined(separator: ", ")); join several with +.")
    var scope: [String] = [APIScope.decrypt.rawValue]

    @Option(help: "The merchant organisation the key acts for (needed by redeem, detokenize and the relay routes).")
    var organization: OrganizationID?

    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard APIKey.isName(name) else { throw ValidationError("--name takes letters, digits, - and _ (at most 64)") }
        if let organization, !APIKey.isName(organization.rawValue) {
            throw ValidationError("--organization takes letters, digits, - and _ (at most 64)")
        }
        // These scopes act for one organisation: the server refuses every such call from a key without one.
        let needOrganization = try scopes().filter { [.redeem, .detokenize, .merchantTokens, .session].contains($0) }
        if organization == nil, let scope = needOrganization.first {
            throw ValidationError("scope \(scope.rawValue) acts for one merchant organisation: add --organization ORG")
        }
    }

    func scopes() throws -> [APIScope] {
        try scope.flatMap { $0.split(separator: "+") }.map { text in
            guard let scope = APIScope(rawValue: String(text)) else {
                throw ValidationError("unknown scope \"\(text)\"; known: \(APIScope.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return scope
        }
    }

    func run() async throws {
        let (key, entry) = APIKey.generate(name: name, scopes: try scopes(), organization: organization)
        if output.json {
            try printJSON(["key": key, "entry": entry])
        } else {
            print("API key (shown once; give it to the client, store it nowhere else): \(key)")
            print("Add to \(SettingCatalog.apiKeys.environmentName) (comma-separated entries): \(entry)")
        }
    }
}

extension OrganizationID: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}
