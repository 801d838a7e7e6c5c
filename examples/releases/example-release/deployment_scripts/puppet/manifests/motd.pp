# Applied with `puppet apply`; writes under the agent's root directory (GRANULE_ROOT, or the
# working directory, which the agent sets to its root).
$root = inline_template('<%= ENV["GRANULE_ROOT"] || Dir.pwd %>')

file { "${root}/state":
  ensure => directory,
}

file { "${root}/state/motd":
  ensure  => file,
  mode    => '0644',
  content => "Welcome to a controller of example-release\n",
  require => File["${root}/state"],
}
