package comm

// The version of gccl; internal/env.Version spells it in text.
const (
	VersionMajor = 0
	VersionMinor = 1
	VersionPatch = 0
)

// Version returns gccl's version as 1000*major + 100*minor + patch, in the
// style of NCCL_VERSION_CODE.
func Version() int {
	return 1000*VersionMajor + 100*VersionMinor + VersionPatch
}
