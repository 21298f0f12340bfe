package config

// platformEnv are the variables a Windows program needs to run at all
// (SYSTEMROOT for its DLLs and sockets, COMSPEC and PATHEXT for npx.cmd
// and the commands it runs, the profile folders for npm's cache and
// config). None holds a credential.
var platformEnv = []string{
	"PATHEXT", "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC",
	"USERPROFILE", "USERNAME", "HOMEDRIVE", "HOMEPATH",
	"APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "PROGRAMFILES", "PROGRAMFILES(X86)",
	"TEMP", "TMP", "NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE",
}
