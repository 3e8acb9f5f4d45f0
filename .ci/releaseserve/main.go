// Command releaseserve serves a goreleaser dist/ directory on loopback the
// way GitHub's release page serves a release, for .ci/release-check.sh to
// install from:
//
//	URL/download/v<version>/<file>   the files of dist/
//	URL/latest                        redirects to URL/tag/v<version>
//
// It writes its URL to the file -url-file once it listens, and serves until
// it is killed.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	dir := flag.String("dir", "dist", "the directory of release files")
	version := flag.String("version", "", "the release's version, without v")
	urlFile := flag.String("url-file", "", "where to write the server's URL")
	flag.Parse()
	if *version == "" || *urlFile == "" {
		log.Fatal("-version and -url-file are required")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	prefix := "/download/v" + *version + "/"
	mux := http.NewServeMux()
	mux.HandleFunc("/latest", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/tag/v"+*version, http.StatusFound)
	})
	mux.HandleFunc("/tag/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "release page")
	})
	mux.HandleFunc(prefix, func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, prefix)
		// Only the files at the top of dist/, as a release has them.
		if name == "" || strings.Contains(name, "/") {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, filepath.Join(*dir, name))
	})
	url := "http://" + ln.Addr().String()
	if err := os.WriteFile(*urlFile+".tmp", []byte(url+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.Rename(*urlFile+".tmp", *urlFile); err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.Serve(ln, mux))
}
