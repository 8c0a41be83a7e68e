package main

import (
	"github.com/spf13/pflag"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/internal/peertls"
)

// appTLSFlags are a client command's credentials for a party's TLS
// application API.
type appTLSFlags struct{ cert, key, ca, server string }

func (f *appTLSFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.cert, "app-tls-cert", "", "this client's application certificate (kord certs --apps NAME: app-NAME.crt); empty: plaintext (loopback or Unix socket)")
	fs.StringVar(&f.key, "app-tls-key", "", "its private key (app-NAME.key)")
	fs.StringVar(&f.ca, "app-ca", "", "CA the party's certificate chains to (ca.crt)")
	fs.StringVar(&f.server, "app-server-name", peertls.PartyName(0), "the name the party's certificate must carry")
}

// addBoth adds the flags of a command that dials both parties: no
// --app-server-name, each party's certificate must carry its own name
// (client.DialParty).
func (f *appTLSFlags) addBoth(fs *pflag.FlagSet) {
	fs.StringVar(&f.cert, "app-tls-cert", "", "the parties' TLS application API: this application's certificate (kord certs --apps NAME); empty: plaintext")
	fs.StringVar(&f.key, "app-tls-key", "", "its private key")
	fs.StringVar(&f.ca, "app-ca", "", "CA the parties' certificates chain to (they must carry kord-party-0 and kord-party-1)")
}

// files returns the certificate files f names (nil: plaintext), or an
// error if only some of the three flags are given.
func (f *appTLSFlags) files() (*client.TLSFiles, error) {
	if f.cert == "" && f.key == "" && f.ca == "" {
		return nil, nil
	}
	if f.cert == "" || f.key == "" || f.ca == "" {
		return nil, badInput("--app-tls-cert, --app-tls-key and --app-ca go together (all three are needed)")
	}
	return &client.TLSFiles{Cert: f.cert, Key: f.key, CA: f.ca}, nil
}

// dialApp dials a party's application address, with TLS when f names
// certificate files.
func dialApp(addr string, f appTLSFlags) (*client.Client, error) {
	if f.cert == "" && f.key == "" && f.ca == "" {
		return client.Dial(addr, nil)
	}
	if f.cert == "" || f.key == "" || f.ca == "" {
		return nil, badInput("--app-tls-cert, --app-tls-key and --app-ca go together (all three are needed)")
	}
	c, err := client.DialTLS(addr, client.TLSFiles{Cert: f.cert, Key: f.key, CA: f.ca, ServerName: f.server})
	if err != nil {
		return nil, badInput("--app-tls-cert/--app-tls-key/--app-ca: %v", err)
	}
	return c, nil
}
