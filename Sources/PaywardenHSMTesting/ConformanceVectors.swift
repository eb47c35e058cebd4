import Foundation

/// The real Apple Pay vectors kept beside the project (`../shared/vectors`), or wherever
/// `PAYWARDEN_VECTORS` points. They are read in place and never copied into the project.
public enum ConformanceVectors {
    public static let directory: String = {
        if let path = ProcessInfo.processInfo.environment["PAYWARDEN_VECTORS"], !path.isEmpty { return path }
        // Sources/PaywardenHSMTesting/ConformanceVectors.swift -> the package root, then ../shared/vectors
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.deletingLastPathComponent().appendingPathComponent("shared/vectors").path
    }()

    /// Whether the vectors are present; when they are not, say so loudly once.
    public static let available: Bool = {
        let present = FileManager.default.fileExists(atPath: directory + "/README.md")
        if !present {
            FileHandle.standardError.write(Data("SKIPPING conformance vectors: none at \(directory) (set PAYWARDEN_VECTORS)\n".utf8))
        }
        return present
    }()

    /// The bytes of `file` in the vector folder `vector`.
    public static func data(_ vector: String, _ file: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(vector)/\(file)"))
    }

    /// A JSON object from the vector folder.
    public static func json(_ vector: String, _ file: String) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: data(vector, file)) as? [String: Any] else {
            throw CocoaError(.coderReadCorrupt)
        }
        return object
    }
}
