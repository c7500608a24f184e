package decide

import (
	"fmt"
	"strings"

	v1alpha1 "github.com/addonwall/addonwall/api/v1alpha1"
)

// Lang is a language the words exist in.
type Lang string

// Languages. English is the seed's; Spanish is ours.
const (
	LangEN Lang = "en"
	LangES Lang = "es"
)

// Langs lists every language the words exist in.
var Langs = []Lang{LangEN, LangES}

// ParseLang reads a language tag such as "es", "ES" or "es-MX" (the region
// is dropped: there is one Spanish). Anything else is an error naming the
// languages there are.
func ParseLang(s string) (Lang, error) {
	base := strings.ToLower(s)
	if i := strings.IndexAny(base, "-_"); i > 0 {
		base = base[:i]
	}
	for _, l := range Langs {
		if base == string(l) {
			return l, nil
		}
	}
	return "", fmt.Errorf("language %q is not one of en, es", s)
}

// The two words an add-on that is off can have. Every off reason maps to
// one of them; the card says the rest.
const (
	wordOffWallEN    = "off: it could not run inside its wall"
	wordOffStoppedEN = "off: it stopped"
	wordOffWallES    = "apagado: no pudo ejecutarse dentro de su muro"
	wordOffStoppedES = "apagado: se detuvo"
)

// words holds every mode reason's status word. English is exactly the
// seed's table; the http word is ours (the seed has no http add-ons).
var words = map[Lang]map[string]string{
	LangEN: {
		v1alpha1.ReasonWalled:             "walled",
		v1alpha1.ReasonSharesCrowDatabase: "not walled: shares Crow's database",
		v1alpha1.ReasonUsesAllStorage:     "not walled: can use all of Crow's storage",
		v1alpha1.ReasonOwnerChoice:        "not walled (your choice)",
		v1alpha1.ReasonHostDefaultOff:     "not walled (switched off for this computer)",
		v1alpha1.ReasonKillSwitch:         "not walled (switched off by the operator)",
		v1alpha1.ReasonNoBubblewrap:       "not walled on this computer; docker reachable",
		v1alpha1.ReasonApprovedCommands:   "not walled (approved commands)",
		v1alpha1.ReasonHTTPAddon:          "not started by Crow: reached over HTTP",
		v1alpha1.ReasonWallFailed:         wordOffWallEN,
		v1alpha1.ReasonBubblewrapUnusable: wordOffWallEN,
		v1alpha1.ReasonInvalidInput:       wordOffWallEN,
		v1alpha1.ReasonPlanFailed:         wordOffWallEN,
		v1alpha1.ReasonSeccompFailed:      wordOffWallEN,
		v1alpha1.ReasonPackagesNotReady:   wordOffWallEN,
		v1alpha1.ReasonWallNotVerified:    wordOffWallEN,
		v1alpha1.ReasonStopped:            wordOffStoppedEN,
		v1alpha1.ReasonOverLimit:          wordOffStoppedEN,
	},
	LangES: {
		v1alpha1.ReasonWalled:             "dentro de su muro",
		v1alpha1.ReasonSharesCrowDatabase: "sin muro: comparte la base de datos de Crow",
		v1alpha1.ReasonUsesAllStorage:     "sin muro: puede usar todo el almacenamiento de Crow",
		v1alpha1.ReasonOwnerChoice:        "sin muro (lo elegiste tú)",
		v1alpha1.ReasonHostDefaultOff:     "sin muro (desactivado en este equipo)",
		v1alpha1.ReasonKillSwitch:         "sin muro (desactivado por el operador)",
		v1alpha1.ReasonNoBubblewrap:       "sin muro en este equipo; docker a su alcance",
		v1alpha1.ReasonApprovedCommands:   "sin muro (comandos aprobados)",
		v1alpha1.ReasonHTTPAddon:          "Crow no lo inicia: se conecta por HTTP",
		v1alpha1.ReasonWallFailed:         wordOffWallES,
		v1alpha1.ReasonBubblewrapUnusable: wordOffWallES,
		v1alpha1.ReasonInvalidInput:       wordOffWallES,
		v1alpha1.ReasonPlanFailed:         wordOffWallES,
		v1alpha1.ReasonSeccompFailed:      wordOffWallES,
		v1alpha1.ReasonPackagesNotReady:   wordOffWallES,
		v1alpha1.ReasonWallNotVerified:    wordOffWallES,
		v1alpha1.ReasonStopped:            wordOffStoppedES,
		v1alpha1.ReasonOverLimit:          wordOffStoppedES,
	},
}

// Word is the status word for a mode reason. A language other than en or
// es reads as English. An unknown reason has no word and gives "": a
// surface must not invent one (a test keeps every api mode reason covered).
func Word(reason string, lang Lang) string {
	return words[known(lang)][reason]
}

// Card is the longer text of a reason: what happened and what to do.
type Card struct {
	What string
	Do   string
}

var cards = map[Lang]map[string]Card{
	LangEN: {
		v1alpha1.ReasonWalled: {
			"It runs inside its wall: it sees only the files, folders and network its wall hands it.",
			"Nothing to do.",
		},
		v1alpha1.ReasonSharesCrowDatabase: {
			"Its server code opens Crow's database, crow.db. It runs inside a wall, but Crow's data folder is bound into it so it can use crow.db: it can read Crow's stored keys and change its database.",
			"Keep it only if you trust it as much as Crow itself; remove the add-on to stop it.",
		},
		v1alpha1.ReasonUsesAllStorage: {
			"It uses Crow's storage and is handed the root object-storage credentials, so it can read and change everything in Crow's storage.",
			"Keep it only if you trust it with all of Crow's storage; remove the add-on to stop it.",
		},
		v1alpha1.ReasonOwnerChoice: {
			"You chose \"Run without the wall\" for this add-on, so it runs with everything your account can reach.",
			"Press \"Wall it again\" on its card to put it back inside its wall.",
		},
		v1alpha1.ReasonHostDefaultOff: {
			"Walls are off for this computer: CROW_ADDON_WALLS_DEFAULT is not set to walled in the gateway's environment.",
			"To wall add-ons here, set CROW_ADDON_WALLS_DEFAULT=walled in the gateway's service environment and restart the gateway.",
		},
		v1alpha1.ReasonKillSwitch: {
			"The operator set CROW_ADDON_WALLS=off, which turns every wall off whatever the other settings say.",
			"Remove CROW_ADDON_WALLS=off from the gateway's environment and restart the gateway to turn walls back on.",
		},
		v1alpha1.ReasonNoBubblewrap: {
			"Bubblewrap (bwrap) is not installed, so nothing can run walled on this computer. The add-on runs with no-new-privileges where setpriv exists, and it can reach docker if docker runs here.",
			"Install bubblewrap (on Debian or Ubuntu: apt install bubblewrap) and restart the gateway.",
		},
		v1alpha1.ReasonApprovedCommands: {
			"This is a data backend command you approved. Approved backends run outside walls.",
			"Remove the approval if you no longer trust the command.",
		},
		v1alpha1.ReasonHTTPAddon: {
			"Crow connects to this add-on at its URL and starts no process for it on this computer, so there is nothing here to wall.",
			"If you run that service yourself, protect it where it runs.",
		},
		v1alpha1.ReasonWallFailed: {
			"Its wall could not be built, or the add-on failed inside it. It stays off: Crow never starts it without the wall after a walled attempt.",
			"Read the gateway's log for the details, then connect again. Press \"Run without the wall\" only if you trust this add-on.",
		},
		v1alpha1.ReasonBubblewrapUnusable: {
			"Bubblewrap is installed but cannot start a sandbox on this computer, for example because the kernel or AppArmor refuses user namespaces.",
			"Allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu, an AppArmor profile for bwrap or kernel.apparmor_restrict_unprivileged_userns=0) and restart the gateway.",
		},
		v1alpha1.ReasonInvalidInput: {
			"One of the add-on's files could not be read; the reason names the file and the key.",
			"Fix that file. The add-on is decided again as soon as the file changes.",
		},
		v1alpha1.ReasonPlanFailed: {
			"The list of what its wall hands it could not be built: a path it names was refused or could not be opened.",
			"Check the paths in the add-on's settings; the message names the one that failed.",
		},
		v1alpha1.ReasonSeccompFailed: {
			"The system-call filter of its wall could not be built, so the add-on was not started.",
			"Report this: it is a fault in this build of addonwall, not in the add-on.",
		},
		v1alpha1.ReasonPackagesNotReady: {
			"It could not get its packages ready inside its wall.",
			"Check that its packages come from npm, PyPI or a pinned GitHub commit and ship pre-built; then connect again.",
		},
		v1alpha1.ReasonWallNotVerified: {
			"After it started, its process did not show the protections of its wall, so it was ended.",
			"Read the gateway's log for the evidence and report it; connect again to retry.",
		},
		v1alpha1.ReasonStopped: {
			"Its process went away on its own.",
			"Connect again to start it; if it keeps stopping, read its own log.",
		},
		v1alpha1.ReasonOverLimit: {
			"It went over its memory, CPU or disk limit and was stopped; the message names the limit.",
			"Raise that limit in its AddonWall if it really needs more, then connect again.",
		},
	},
	LangES: {
		v1alpha1.ReasonWalled: {
			"Se ejecuta dentro de su muro: solo ve los archivos, carpetas y red que su muro le da.",
			"No hay nada que hacer.",
		},
		v1alpha1.ReasonSharesCrowDatabase: {
			"Su código de servidor abre la base de datos de Crow, crow.db. Se ejecuta dentro de un muro, pero la carpeta de datos de Crow está montada en él para que pueda usar crow.db: puede leer las claves guardadas de Crow y cambiar su base de datos.",
			"Consérvalo solo si confías en él tanto como en Crow; quita el complemento para detenerlo.",
		},
		v1alpha1.ReasonUsesAllStorage: {
			"Usa el almacenamiento de Crow y recibe las credenciales raíz del almacenamiento de objetos, así que puede leer y cambiar todo lo que hay en el almacenamiento de Crow.",
			"Consérvalo solo si le confías todo el almacenamiento de Crow; quita el complemento para detenerlo.",
		},
		v1alpha1.ReasonOwnerChoice: {
			"Elegiste «Ejecutar sin el muro» para este complemento, así que se ejecuta con todo lo que tu cuenta puede alcanzar.",
			"Pulsa «Volver a poner el muro» en su tarjeta para devolverlo a su muro.",
		},
		v1alpha1.ReasonHostDefaultOff: {
			"Los muros están desactivados en este equipo: CROW_ADDON_WALLS_DEFAULT no vale walled en el entorno del gateway.",
			"Para poner muros aquí, define CROW_ADDON_WALLS_DEFAULT=walled en el entorno del servicio del gateway y reinícialo.",
		},
		v1alpha1.ReasonKillSwitch: {
			"El operador definió CROW_ADDON_WALLS=off, que desactiva todos los muros diga lo que diga el resto de ajustes.",
			"Quita CROW_ADDON_WALLS=off del entorno del gateway y reinícialo para volver a activar los muros.",
		},
		v1alpha1.ReasonNoBubblewrap: {
			"Bubblewrap (bwrap) no está instalado, así que nada puede ejecutarse con muro en este equipo. El complemento se ejecuta con no-new-privileges donde existe setpriv, y puede llegar a docker si docker funciona aquí.",
			"Instala bubblewrap (en Debian o Ubuntu: apt install bubblewrap) y reinicia el gateway.",
		},
		v1alpha1.ReasonApprovedCommands: {
			"Es un comando de backend de datos que aprobaste. Los backends aprobados se ejecutan fuera de los muros.",
			"Retira la aprobación si ya no confías en el comando.",
		},
		v1alpha1.ReasonHTTPAddon: {
			"Crow se conecta a este complemento en su URL y no inicia ningún proceso para él en este equipo, así que aquí no hay nada que amurallar.",
			"Si ese servicio lo ejecutas tú, protégelo donde se ejecuta.",
		},
		v1alpha1.ReasonWallFailed: {
			"No se pudo construir su muro, o el complemento falló dentro de él. Sigue apagado: Crow nunca lo inicia sin muro después de un intento con muro.",
			"Lee el registro del gateway para ver los detalles y vuelve a conectar. Pulsa «Ejecutar sin el muro» solo si confías en este complemento.",
		},
		v1alpha1.ReasonBubblewrapUnusable: {
			"Bubblewrap está instalado pero no puede iniciar un entorno aislado en este equipo, por ejemplo porque el núcleo o AppArmor rechazan los espacios de nombres de usuario.",
			"Permite los espacios de nombres de usuario sin privilegios (sysctl kernel.unprivileged_userns_clone=1; en Ubuntu, un perfil de AppArmor para bwrap o kernel.apparmor_restrict_unprivileged_userns=0) y reinicia el gateway.",
		},
		v1alpha1.ReasonInvalidInput: {
			"No se pudo leer uno de los archivos del complemento; el motivo indica el archivo y la clave.",
			"Corrige ese archivo. El complemento se vuelve a decidir en cuanto el archivo cambia.",
		},
		v1alpha1.ReasonPlanFailed: {
			"No se pudo preparar la lista de lo que su muro le da: una ruta que indica fue rechazada o no se pudo abrir.",
			"Revisa las rutas de los ajustes del complemento; el mensaje indica la que falló.",
		},
		v1alpha1.ReasonSeccompFailed: {
			"No se pudo construir el filtro de llamadas al sistema de su muro, así que el complemento no se inició.",
			"Informa de esto: es un fallo de esta versión de addonwall, no del complemento.",
		},
		v1alpha1.ReasonPackagesNotReady: {
			"No pudo preparar sus paquetes dentro de su muro.",
			"Comprueba que sus paquetes vienen de npm, PyPI o un commit fijado de GitHub y que están precompilados; luego vuelve a conectar.",
		},
		v1alpha1.ReasonWallNotVerified: {
			"Después de iniciarse, su proceso no mostraba las protecciones de su muro, así que se terminó.",
			"Lee las pruebas en el registro del gateway e informa del problema; vuelve a conectar para reintentarlo.",
		},
		v1alpha1.ReasonStopped: {
			"Su proceso terminó por su cuenta.",
			"Vuelve a conectar para iniciarlo; si se sigue deteniendo, lee su propio registro.",
		},
		v1alpha1.ReasonOverLimit: {
			"Superó su límite de memoria, CPU o disco y se detuvo; el mensaje indica el límite.",
			"Sube ese límite en su AddonWall si de verdad necesita más y vuelve a conectar.",
		},
	},
}

// Explain is the card text of a mode reason. A language other than en or es
// reads as English; an unknown reason gives an empty Card.
func Explain(reason string, lang Lang) Card {
	return cards[known(lang)][reason]
}

// Key names a sentence that is not a status word: notice titles, notice
// lines and the sandbox-line additions.
type Key string

// Keys.
const (
	// TitleSomeNotWalled is the per-boot notice's title.
	TitleSomeNotWalled Key = "title.someNotWalled"
	// TitleWallsNowOn is the once-per-computer notice's title.
	TitleWallsNowOn Key = "title.wallsNowOn"
	// TitleKillSwitch is the title of the notice a host switched off by the
	// kill switch gets on the first boot of a build that carries walls.
	TitleKillSwitch Key = "title.killSwitch"
	// TitleSettingsChanged is the title of the note about addon-walls.json
	// being changed by something other than Crow.
	TitleSettingsChanged Key = "title.settingsChanged"

	// LineNotWalledIntro opens the per-boot notice.
	LineNotWalledIntro Key = "line.notWalledIntro"
	// LineKillSwitchSet and LineKillSwitchNotSet close the per-boot notice.
	LineKillSwitchSet    Key = "line.killSwitchSet"
	LineKillSwitchNotSet Key = "line.killSwitchNotSet"
	// LineWallsNowOnIntro opens the once-per-computer notice.
	LineWallsNowOnIntro Key = "line.wallsNowOnIntro"
	// LineKillSwitchIntro opens the kill-switch notice.
	LineKillSwitchIntro Key = "line.killSwitchIntro"
	// LineSettingsChanged is the body of the settings-changed note.
	LineSettingsChanged Key = "line.settingsChanged"
	// LineNotCovered is the sentence every walled add-on's status line ends with.
	LineNotCovered Key = "line.notCovered"
	// LineNoAddons stands in for an empty list.
	LineNoAddons Key = "line.noAddons"

	// ReachSharesDB is what the sandbox line adds for a crow.db reader.
	ReachSharesDB Key = "reach.sharesDb"
	// ReachAllStorage is what the sandbox line adds for a storage reader.
	ReachAllStorage Key = "reach.allStorage"

	// ButtonRunWithoutWall and ButtonWallAgain are the card's two buttons;
	// the card texts name them, so their labels live here too.
	ButtonRunWithoutWall Key = "button.runWithoutWall"
	ButtonWallAgain      Key = "button.wallAgain"
)

var texts = map[Lang]map[Key]string{
	LangEN: {
		TitleSomeNotWalled:   "Some add-ons are not walled",
		TitleWallsNowOn:      "Add-ons now run inside walls on this computer",
		TitleKillSwitch:      "Add-on walls are switched off by the operator",
		TitleSettingsChanged: "Add-on wall settings were changed outside Crow",
		LineNotWalledIntro:   "These run without a wall on this computer:",
		LineKillSwitchSet:    "The kill switch is set (CROW_ADDON_WALLS=off), so every wall on this computer is off. Remove it and restart the gateway to turn walls back on.",
		LineKillSwitchNotSet: "The kill switch is not set. CROW_ADDON_WALLS=off in the gateway's environment turns every wall off at once.",
		LineWallsNowOnIntro:  "Each add-on below now runs inside its own wall and can reach only what is listed:",
		LineKillSwitchIntro:  "This version of Crow can run add-ons inside walls, but the operator set CROW_ADDON_WALLS=off, so none of them runs walled on this computer:",
		LineSettingsChanged:  "Something other than Crow changed addon-walls.json. The new settings take effect at the next connect.",
		LineNotCovered:       "Bots' and satellites' copies of add-ons, and approved data backends, are not walled.",
		LineNoAddons:         "(no add-ons)",
		ReachSharesDB:        "read Crow's stored keys and change its database",
		ReachAllStorage:      "use all of Crow's storage",
		ButtonRunWithoutWall: "Run without the wall",
		ButtonWallAgain:      "Wall it again",
	},
	LangES: {
		TitleSomeNotWalled:   "Algunos complementos no tienen muro",
		TitleWallsNowOn:      "Los complementos ya se ejecutan dentro de muros en este equipo",
		TitleKillSwitch:      "El operador desactivó los muros de los complementos",
		TitleSettingsChanged: "Los ajustes de los muros se cambiaron fuera de Crow",
		LineNotWalledIntro:   "Estos se ejecutan sin muro en este equipo:",
		LineKillSwitchSet:    "El interruptor de emergencia está activado (CROW_ADDON_WALLS=off), así que todos los muros de este equipo están desactivados. Quítalo y reinicia el gateway para volver a activarlos.",
		LineKillSwitchNotSet: "El interruptor de emergencia no está activado. CROW_ADDON_WALLS=off en el entorno del gateway desactiva todos los muros a la vez.",
		LineWallsNowOnIntro:  "Cada complemento de esta lista ya se ejecuta dentro de su propio muro y solo alcanza lo que se indica:",
		LineKillSwitchIntro:  "Esta versión de Crow puede ejecutar los complementos dentro de muros, pero el operador definió CROW_ADDON_WALLS=off, así que ninguno se ejecuta con muro en este equipo:",
		LineSettingsChanged:  "Algo distinto de Crow cambió addon-walls.json. Los nuevos ajustes se aplican en la próxima conexión.",
		LineNotCovered:       "Las copias de complementos de los bots y los satélites, y los backends de datos aprobados, no tienen muro.",
		LineNoAddons:         "(ningún complemento)",
		ReachSharesDB:        "leer las claves guardadas de Crow y cambiar su base de datos",
		ReachAllStorage:      "usar todo el almacenamiento de Crow",
		ButtonRunWithoutWall: "Ejecutar sin el muro",
		ButtonWallAgain:      "Volver a poner el muro",
	},
}

// Text is the sentence for a key. A language other than en or es reads as
// English; an unknown key gives "".
func Text(k Key, lang Lang) string {
	return texts[known(lang)][k]
}

func known(l Lang) Lang {
	if l == LangES {
		return LangES
	}
	return LangEN
}
