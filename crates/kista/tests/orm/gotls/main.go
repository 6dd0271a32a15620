// go-sql-driver over TLS to the Kista SQL front end, verifying its certificate against
// the cluster's authority (kista tls): reports the session's cipher. A certificate from
// another authority must be refused. Run by crates/kista/tests/sql.rs:
//
//	gotls PORT CA_PEM OTHER_CA_PEM
package main

import (
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"fmt"
	"os"
	"strings"

	"github.com/go-sql-driver/mysql"
)

func register(name, caPath string) {
	pem, err := os.ReadFile(caPath)
	if err != nil {
		panic(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		panic("no certificate in " + caPath)
	}
	if err := mysql.RegisterTLSConfig(name, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}); err != nil {
		panic(err)
	}
}

func main() {
	port, ca, other := os.Args[1], os.Args[2], os.Args[3]
	register("kista", ca)
	register("stranger", other)
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%s)/?tls=kista", port))
	if err != nil {
		panic(err)
	}
	var name, cipher string
	if err := db.QueryRow("SHOW STATUS LIKE 'Ssl_cipher'").Scan(&name, &cipher); err != nil {
		panic(err)
	}
	if !strings.HasPrefix(cipher, "TLS_") {
		panic("no TLS cipher: " + cipher)
	}
	var one int
	if err := db.QueryRow("SELECT ?", 1).Scan(&one); err != nil || one != 1 {
		panic(fmt.Sprint("a prepared SELECT over TLS: ", one, err))
	}
	db.Close()
	refused, _ := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%s)/?tls=stranger", port))
	if err := refused.Ping(); err == nil || !strings.Contains(err.Error(), "certificate") {
		panic(fmt.Sprint("another authority's client was not refused: ", err))
	}
	fmt.Println("go tls ok", cipher)
}
