package stackgraph_test

import (
	"fmt"
	"testing"
)

// BenchmarkChanged is the discovery of the stacks and --changed's work
// after git listed the files (each measured alone): 300
// stacks that each use a local module and read three files outside their
// directories, a symbolic link, a watch list, and 750 changed files.
func BenchmarkChanged(b *testing.B) {
	files := map[string]string{
		"sponson.hcl":       env + `watch = ["config/**"]`,
		"modules/m/main.tf": `locals { a = file("${path.module}/../../shared/f1.cfg") }`,
	}
	var changed []string
	for i := range 50 {
		files[fmt.Sprintf("shared/f%d.cfg", i)] = "x"
		changed = append(changed, fmt.Sprintf("shared/f%d.cfg", i))
	}
	for i := range 300 {
		files[fmt.Sprintf("stacks/s%d/main.tf", i)] = scope + fmt.Sprintf(`module "m" { source = "../../modules/m" }
locals {
  base = "${path.module}/../../shared"
  a    = file("${local.base}/f%d.cfg")
  b    = templatefile("${path.module}/tpl/x.tpl", {})
  c    = fileset("${path.module}/../../shared", "*.yaml")
}
`, i%50)
		if i < 200 {
			changed = append(changed, fmt.Sprintf("stacks/s%d/tpl/x.tpl", i))
		}
	}
	for i := range 500 {
		changed = append(changed, fmt.Sprintf("other/o%d", i))
	}
	root := tree(b, files)
	b.Run("discover", func(b *testing.B) {
		for b.Loop() {
			if _, err := discover(b, root); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("changed", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			set, err := discover(b, root)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if n := len(set.Changed(changed).Stacks); n != 300 {
				b.Fatalf("%d stacks changed, want 300", n)
			}
		}
	})
}
