import SwiftVT

/// One chunk's state between the steps of a farm encode: its analysis storage and its frame silo
/// (both kept when closed), and `chunk.txt` naming them. The job moves the directory's files
/// between hosts as they are (through Dask), so the names are relative.
///
///     swiftvt-chunk 1
///     storage <file name of the MultiPassStorage>
///     silo <file name of the FrameSilo's index (its data file is beside it)>
///     passes <passes this chunk has been through>
struct ChunkDirectory {
    let path: String

    static let magic = "swiftvt-chunk 1"
    var manifestPath: String { path + "/chunk.txt" }

    struct Manifest {
        var storageName: String
        var siloIndexName: String
        var passes: Int
    }

    func readManifest() throws(FarmFailure) -> Manifest {
        guard TextFile.exists(manifestPath) else {
            throw .failed(
                "\(path) holds no chunk (no chunk.txt): run pass 1 of the chunk (swiftvt-farm encode without --plan) first"
            )
        }
        let lines = try TextFile.read(manifestPath).split(separator: "\n").map(String.init)
        var storage: String?
        var silo: String?
        var passes: Int?
        for line in lines.dropFirst() {
            let fields = line.split(separator: " ", maxSplits: 1).map(String.init)
            guard fields.count == 2 else { continue }
            switch fields[0] {
            case "storage": storage = fields[1]
            case "silo": silo = fields[1]
            case "passes": passes = Int(fields[1])
            default: break
            }
        }
        guard lines.first == Self.magic, let storage, let silo, let passes,
            !storage.contains("/"), !silo.contains("/")
        else {
            throw .failed("\(manifestPath) is not a chunk manifest written by swiftvt-farm")
        }
        return Manifest(storageName: storage, siloIndexName: silo, passes: passes)
    }

    func writeManifest(_ manifest: Manifest) throws(FarmFailure) {
        try TextFile.write(
            "\(Self.magic)\nstorage \(manifest.storageName)\nsilo \(manifest.siloIndexName)\npasses \(manifest.passes)\n",
            to: manifestPath)
    }

    /// The chunk's storage and silo, opened again (kept when closed).
    func open() throws(FarmFailure) -> (Manifest, MultiPassStorage, FrameSilo) {
        let manifest = try readManifest()
        do throws(VTError) {
            let storage = try MultiPassStorage(reopening: path + "/" + manifest.storageName, keepOnClose: true)
            let silo = try FrameSilo(reopeningIndexAt: path + "/" + manifest.siloIndexName, keepOnClose: true)
            return (manifest, storage, silo)
        } catch {
            throw .vt(error, "cannot open the chunk in \(path)")
        }
    }

    /// The chunk's silo alone, opened again (kept when closed).
    func openSilo() throws(FarmFailure) -> FrameSilo {
        let manifest = try readManifest()
        do throws(VTError) {
            return try FrameSilo(reopeningIndexAt: path + "/" + manifest.siloIndexName, keepOnClose: true)
        } catch {
            throw .vt(error, "cannot open the frames of the chunk in \(path)")
        }
    }
}
