import ArgumentParser

public struct KeysCommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Apple Pay merchant keys: create, certify, rotate, retire, destroy, list, adopt.",
        discussion: "Every action is appended to the audit log at audit/audit.jsonl under the Paywarden home.",
        subcommands: [
            KeysCreate.self, KeysImportCertificate.self, KeysRotate.self, KeysImport.self,
            KeysList.self, KeysAdopt.self, KeysRetire.self, KeysDestroy.self,
        ]
    )
}
