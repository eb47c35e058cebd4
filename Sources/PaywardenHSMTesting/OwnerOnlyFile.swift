import Foundation

/// Writes a file that only its owner may read or write (0600), as Paywarden requires of a file
/// holding a secret (a PIN, a password, a private key): under the usual umask a plain write
/// leaves it 0644, which the service refuses.
public enum OwnerOnlyFile {
    public static func write(_ contents: Data, to path: String) throws {
        // Created 0600 before the secret goes in; an existing file is truncated and made 0600.
        guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: contents)
    }

    public static func write(_ text: String, to path: String) throws {
        try write(Data(text.utf8), to: path)
    }
}
