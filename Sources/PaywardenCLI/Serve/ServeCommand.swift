import ArgumentParser
import Foundation
import Logging
import PaywardenConfiguration
import PaywardenServer

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the HTTP service: POST /v1/payment-tokens/decrypt, /healthz, /readyz, /metrics.",
        discussion: """
            Configured by the environment and an optional JSON file ({"paywarden": {"listen": "…", …}}); the \
            environment overrides the file. `paywarden config show` prints every setting, its effective value and \
            where it came from. Stops on SIGTERM or SIGINT after finishing in-flight requests.
            """
    )

    @Option(help: "A JSON configuration file (default: \(SettingCatalog.configurationFileVariable)).")
    var config: String?

    func run() async throws {
        do {
            let settings = try await PaywardenSettings.load(file: config)
            CommandLogging.bootstrap(level: settings.logLevel.flatMap(Logger.Level.init(rawValue:)) ?? .info)
            let server = try await PaywardenServer.make(ServerConfiguration(settings: settings), logger: Logger(label: "paywarden"))
            try await server.run()
        } catch {
            let failure = CommandFailure(describing: error)
            failure.report()
            throw failure.exitCode
        }
    }
}

struct APIKeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
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
    var organization: String?

    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard APIKey.isName(name) else { throw ValidationError("--name takes letters, digits, - and _ (at most 64)") }
        if let organization, !APIKey.isName(organization) {
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
