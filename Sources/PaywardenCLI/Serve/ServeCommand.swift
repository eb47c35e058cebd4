import ArgumentParser
import Foundation
import Logging
import PaywardenServer

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the HTTP service: POST /v1/payment-tokens/decrypt, /healthz, /readyz, /metrics.",
        discussion: """
            Configured by the environment (PAYWARDEN_LISTEN, PAYWARDEN_API_KEYS, PAYWARDEN_TLS_*, the HSM settings, …) \
            and an optional JSON file ({"paywarden": {"listen": "…", …}}); the environment overrides the file. \
            Stops on SIGTERM or SIGINT after finishing in-flight requests.
            """
    )

    @Option(help: "A JSON configuration file (default: PAYWARDEN_CONFIG).")
    var config: String?

    func run() async throws {
        CommandLogging.bootstrap(defaultLevel: .info)
        try await reportingFailures {
            let configuration: ServerConfiguration
            do {
                configuration = try await ServerConfiguration.load(file: config)
            } catch let error as ServerConfigurationError {
                throw CommandFailure(.misconfiguration, error.description)
            }
            let server = try await PaywardenServer.make(configuration, logger: Logger(label: "paywarden"))
            try await server.run()
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
        abstract: "Create an API key: prints the key once, and the entry (its SHA-256, never the key) for PAYWARDEN_API_KEYS."
    )

    @Option(help: "A name for the key's holder (letters, digits, - and _).")
    var name: String = "payments"

    @Option(help: "What the key may do: decrypt.")
    var scope: [APIScope] = [.decrypt]

    @Flag(help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw ValidationError("--name takes letters, digits, - and _")
        }
    }

    func run() async throws {
        let (key, entry) = APIKey.generate(name: name, scopes: scope)
        if json {
            try printJSON(["key": key, "entry": entry])
        } else {
            print("API key (shown once; give it to the client, store it nowhere else): \(key)")
            print("Add to PAYWARDEN_API_KEYS (comma-separated entries): \(entry)")
        }
    }
}

extension APIScope: ExpressibleByArgument {}
