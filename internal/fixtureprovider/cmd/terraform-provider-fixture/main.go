// Command terraform-provider-fixture is the fixture provider of sponson's
// tests as a plugin binary of OpenTofu or Terraform. Tests build it with
// fixtureprovider.Build and point the engine at it with
// fixtureprovider.WriteCLIConfig.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/sponson/terraform-provider-sponson/internal/fixtureprovider"
)

// version is the provider's version as the engine sees it; the filesystem
// mirror of WriteCLIConfig offers the same one.
var version = fixtureprovider.MirrorVersion

func main() {
	var debug bool

	flag.BoolVar(&debug, "debug", false, "set to true to run the provider with support for debuggers like delve")
	flag.Parse()

	opts := providerserver.ServeOpts{
		Address: fixtureprovider.Address,
		Debug:   debug,
	}

	err := providerserver.Serve(context.Background(), fixtureprovider.New(version), opts)
	if err != nil {
		log.Fatal(err.Error())
	}
}
